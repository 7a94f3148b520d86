package reconcile

import "github.com/docketlog/docket/receipts"

// Match returns the calls of a record that no receipt of the session's
// chain accounts for. A call is accounted for by a decision receipt
// (PreToolUse) or by an unmediated_call receipt an earlier reconciliation
// signed for it: one with the call's id, the earliest not yet taken; a call
// without an id, or whose id no receipt has left, by one with its tool name
// and input hash, in order. Each receipt accounts for one call: a call id
// the record holds twice needs two receipts. An unmediated_call receipt,
// signed from the record itself, accounts only for a call with its input
// hash too: a record edited since shows the edited call again. (A
// decision's input hash is the hook's view of the input, which for Codex
// differs from the rollout's: by id, it is not compared.)
func Match(calls []Call, chain []receipts.Payload) []Call {
	type key struct{ tool, input string }
	byID := make(map[string][]int)
	byInput := make(map[key][]int)
	taken := make([]bool, len(chain))
	for i, p := range chain {
		if p.HookEvent != receipts.PreToolUse && p.HookEvent != receipts.UnmediatedCall {
			continue
		}
		if p.ToolUseID != "" {
			byID[p.ToolUseID] = append(byID[p.ToolUseID], i)
		}
		k := key{p.ToolName, p.ToolInputHash}
		byInput[k] = append(byInput[k], i)
	}
	// take takes the first receipt of q not taken yet that may account
	// for c, and returns q without the receipts before it.
	take := func(q []int, c Call) ([]int, bool) {
		for j, i := range q {
			if taken[i] || chain[i].HookEvent == receipts.UnmediatedCall && chain[i].ToolInputHash != c.InputHash {
				continue
			}
			taken[i] = true
			if j == 0 {
				q = q[1:]
			}
			return q, true
		}
		return q, false
	}
	var out []Call
	for _, c := range calls {
		ok := false
		if c.ID != "" {
			byID[c.ID], ok = take(byID[c.ID], c)
		}
		if !ok {
			k := key{c.Tool, c.InputHash}
			// An id the chain holds for another call does not match by input.
			var cand []int
			for _, i := range byInput[k] {
				if c.ID == "" || chain[i].ToolUseID == "" || chain[i].ToolUseID == c.ID {
					cand = append(cand, i)
				}
			}
			if _, ok = take(cand, c); !ok {
				out = append(out, c)
			}
		}
	}
	return out
}
