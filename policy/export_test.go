package policy

import (
	"context"
	"encoding/json"
	"testing"
)

// CheckCorpusThrough runs the corpora of TestCorpus through decide instead
// of Engine.Decide and checks the same targets, for tests outside the
// package that decide the way a command does (the policy eval path:
// eval_corpus_test.go). decide gets the project and home directories of the
// corpus fixture, the tool and its tool_input.
func CheckCorpusThrough(t *testing.T, decide func(ctx context.Context, project, home, tool string, input json.RawMessage) Decision) {
	t.Helper()
	checkCorpus(t, runCorpus(t, func(ctx context.Context, f fixture, tool string, input json.RawMessage) Decision {
		return decide(ctx, f.proj, f.home, tool, input)
	}))
}
