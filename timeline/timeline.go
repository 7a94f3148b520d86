// Package timeline reads one session back for the people who run Docket:
// its receipt chain and its local journal (store.Journal) joined into a
// readable list of calls — when, which tool, the command or path, the
// decision and the policy's reason, and whether the call then ran. It is
// what docket show prints. What it shows of an input is redacted by the
// rules the default policy knows (Redact): the journal keeps the exact
// input, a terminal never gets a token or a secret file's content.
package timeline

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// An Entry is one call of a session, or one lifecycle event.
type Entry struct {
	Sequence int64  `json:"sequence"`
	Time     string `json:"time"`
	// Event is the receipt's hook_event, or its lifecycle_event.
	Event string `json:"event"`
	Tool  string `json:"tool,omitempty"`
	// Input is the command, path or URL of the call (else its input in
	// short), redacted; "" when the journal does not hold it.
	Input string `json:"input,omitempty"`
	// Decision and Reason are the receipt's; Why is the policy's @reason of
	// the first policy that decided; Enforced is false in observe mode.
	Decision  string   `json:"decision,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	PolicyIDs []string `json:"policy_ids,omitempty"`
	Why       string   `json:"why,omitempty"`
	Enforced  *bool    `json:"enforced,omitempty"`
	// Outcome is what became of an allowed call: "ran", "failed" (the
	// tool failed), or "" when no execution receipt links it (yet).
	Outcome     string `json:"outcome,omitempty"`
	ReceiptHash string `json:"receipt_hash"`
}

// Build reads session's chain and journal from s. why, when not nil,
// returns the @reason of a policy by its ID (policy.Engine.Reason).
// Executions are folded into the decisions they link to.
func Build(s *store.Store, session string, why func(id string) string) ([]Entry, error) {
	chain, err := s.Receipts(session)
	if err != nil {
		return nil, err
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("no session %q", session)
	}
	inputs := make(map[string]store.JournalEntry)
	for e, err := range s.Journal(session) {
		if err == nil {
			inputs[e.ReceiptHash] = e
		}
	}
	var out []Entry
	byHash := make(map[string]int) // receipt hash -> index in out
	for i, line := range chain {
		rc, err := receipts.Open(line, nil)
		if err != nil {
			return nil, fmt.Errorf("session %s receipt %d: %w", session, i+1, err)
		}
		p := rc.Payload
		if j, ok := byHash[p.DecisionReceiptHash]; ok && p.DecisionReceiptHash != "" {
			out[j].Outcome = "ran"
			if strings.HasSuffix(p.HookEvent, "Failure") {
				out[j].Outcome = "failed"
			}
			continue
		}
		e := Entry{Sequence: p.Sequence, Time: p.IssuedAt, Event: p.HookEvent, Tool: p.ToolName,
			Decision: p.Decision, Reason: p.Reason, PolicyIDs: p.PolicyIDs, Enforced: p.Enforced, ReceiptHash: rc.Hash}
		if e.Event == "" {
			e.Event = p.LifecycleEvent
		}
		if je, ok := inputs[rc.Hash]; ok {
			e.Input = Summary(je.ToolName, je.ToolInput)
			switch {
			case je.Omitted != "":
				e.Input = fmt.Sprintf("(input not kept: %s, %d bytes)", je.Omitted, je.InputSize)
			case (p.ToolInputHash != "" || p.ToolInputCommitment != "") && !je.Matches(p.ToolInputHash, p.ToolInputCommitment):
				// The journal is local and writable: an entry altered
				// since is not what the receipt signed.
				e.Input = "(journal entry does not match the receipt's input hash or commitment: not shown)"
			}
		}
		if why != nil && p.Decision != receipts.Allow {
			for _, id := range p.PolicyIDs {
				if w := why(id); w != "" {
					e.Why = w
					break
				}
			}
		}
		byHash[rc.Hash] = len(out)
		out = append(out, e)
	}
	return out, nil
}

// maxSummary bounds the text Summary returns.
const maxSummary = 200

// Summary returns what a person wants to see of a call's input: the
// command of a shell call, the path or URL of a file or web call, else the
// input itself in short; redacted (Redact), and the content of a write to
// a secret file never shown.
func Summary(tool string, input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return shorten(Redact(string(input)))
	}
	for _, k := range []string{"command", "cmd", "file_path", "path", "notebook_path", "url", "pattern", "query"} {
		switch v := m[k].(type) {
		case string:
			if k == "command" || k == "cmd" {
				v = redactSecretWrites(v)
			}
			return shorten(Redact(v))
		case []any:
			parts := make([]string, 0, len(v))
			for _, x := range v {
				parts = append(parts, fmt.Sprint(x))
			}
			return shorten(Redact(strings.Join(parts, " ")))
		}
	}
	return shorten(Redact(string(input)))
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxSummary {
		return s[:maxSummary] + "…"
	}
	return s
}
