package suggest

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Observed reads the decisions to draft from: the PreToolUse receipts of
// every session chain of s whose decision is not an allow and that observe
// mode did not enforce (with all, the enforced ones too), each with the
// call's input from the local journal where it is kept. Receipts are read
// with receipts.Open and the project's issuer key: a chain that does not
// verify is an error, not a source of permits.
func Observed(s *store.Store, all bool) ([]Observation, error) {
	key, err := s.Key()
	if err != nil {
		return nil, fmt.Errorf("issuer key: %w", err)
	}
	keys := receipts.PinnedKey(key.Public().(ed25519.PublicKey))
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	var out []Observation
	for _, session := range sessions {
		inputs := make(map[string]store.JournalEntry)
		for e, err := range s.Journal(session) {
			if err == nil && e.ToolInput != nil {
				inputs[e.ReceiptHash] = e
			}
		}
		recs, err := s.Receipts(session)
		if err != nil {
			return nil, err
		}
		for i, data := range recs {
			r, err := receipts.Open(data, keys)
			if err != nil {
				return nil, fmt.Errorf("session %s receipt %d: %w", session, i+1, err)
			}
			p := r.Payload
			unenforced := p.Enforced != nil && !*p.Enforced
			if p.HookEvent != receipts.PreToolUse || p.Decision == receipts.Allow || !(unenforced || all) {
				continue
			}
			o := Observation{Agent: p.Agent, ToolName: p.ToolName, Decision: p.Decision, Reason: p.Reason,
				PolicyIDs: p.PolicyIDs, Enforced: !unenforced, ReceiptHash: r.Hash}
			if e, ok := inputs[r.Hash]; ok && e.Matches(p.ToolInputHash, p.ToolInputCommitment) {
				o.Calls = callsOf(p.Agent, p.ToolName, e, s.Project())
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// callsOf maps a journaled input to the policy's calls as the hook of the
// agent did (hook.ParseEvent), or, for a call the MCP relay decided, as
// one MCP call without the relay's server context.
func callsOf(agent, tool string, e store.JournalEntry, project string) []policy.Call {
	cwd := e.Cwd
	if cwd == "" {
		cwd = project
	}
	a, err := hook.ParseAgent(agent)
	if err != nil {
		if !strings.HasPrefix(tool, "mcp__") {
			return nil
		}
		return []policy.Call{{Agent: agent, ToolName: tool, ToolInput: e.ToolInput, Cwd: cwd, MCP: &policy.MCPContext{}}}
	}
	ev, err := json.Marshal(map[string]any{"session_id": e.SessionID, "cwd": cwd, "tool_name": tool,
		"tool_input": json.RawMessage(e.ToolInput)})
	if err != nil {
		return nil
	}
	parsed, err := hook.ParseEvent(a, hook.Pre, ev, project)
	if err != nil {
		return nil
	}
	return parsed.Calls
}
