package hook_test

import (
	"strings"
	"testing"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// In observe mode every agent's pre hook answers the policy's deny and ask
// as an allow (exit 0, no ask JSON), and signs them "enforced": false; a
// hook input the gate cannot read still blocks.
func TestPreObserve(t *testing.T) {
	p := newProject(t)
	if err := store.Open(p.dir).WriteConfig(store.Config{Observe: true}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, agent, fixture, key, command string
		decision                           string
	}{
		{"claude deny", "claude", "claude/pre-bash.json", "tool_input.command", "rm -rf /", receipts.Deny},
		{"claude ask", "claude", "claude/pre-bash.json", "tool_input.command", "terraform plan", receipts.RequireApproval},
		{"gemini ask", "gemini", "gemini/before-tool-shell.json", "tool_input.command", "terraform plan", receipts.RequireApproval},
		{"codex deny", "codex", "codex/pre-bash.json", "tool_input.command", "rm -rf /", receipts.Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session := strings.ReplaceAll(tt.name, " ", "-")
			ev := p.fixture(t, tt.fixture, map[string]any{"session_id": session, tt.key: tt.command})
			args := []string{"hook", "pre"}
			if tt.agent != "claude" {
				args = append(args, "-agent", tt.agent)
			}
			if r := p.run(t, ev, nil, args...); r.code != 0 || r.stdout != "" {
				t.Fatalf("docket %v = exit %d, stdout %q, stderr %q; want exit 0 and no output", args, r.code, r.stdout, r.stderr)
			}
			pl := p.verify(t, session)
			if last := pl[len(pl)-1]; last.Decision != tt.decision || last.Enforced == nil || *last.Enforced {
				t.Errorf("receipt = %s enforced %v, want %s enforced false", last.Decision, last.Enforced, tt.decision)
			}
		})
	}
	if r := p.run(t, []byte(`{"session_id":"x","tool_name":"Bash","tool_input":{"command":7}}`), nil, "hook", "pre"); r.code != 2 {
		t.Errorf("unreadable input in observe mode = exit %d, want 2", r.code)
	}
}
