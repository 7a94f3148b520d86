package policy_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/policy"
)

// TestCorpusEvalPath runs the corpora through the path of `docket policy
// eval` and of the pre hook, not the policy alone: each call becomes a
// Claude Code PreToolUse event, which hook.ParseEvent reads and
// gate.Evaluate decides, request by request.
func TestCorpusEvalPath(t *testing.T) {
	eng, err := policy.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	policy.CheckCorpusThrough(t, func(ctx context.Context, project, home, tool string, input json.RawMessage) policy.Decision {
		data, err := json.Marshal(map[string]any{
			"session_id": "corpus", "hook_event_name": "PreToolUse", "cwd": project,
			"tool_name": tool, "tool_input": input, "tool_use_id": "toolu_corpus",
		})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := hook.ParseEvent(hook.Claude, hook.Pre, data, project)
		if err != nil {
			t.Fatalf("ParseEvent(%s): %v", data, err)
		}
		return gate.Evaluate(ctx, eng, ev.Calls, project, home)
	})
}
