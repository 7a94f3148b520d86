package reconcile

import "github.com/docketlog/docket/receipts"

// Match returns the calls of a record that no receipt of the session's
// chain accounts for. A call is accounted for by a decision receipt
// (PreToolUse) or by an unmediated_call receipt an earlier reconciliation
// signed for it: one with the call's id, the earliest not yet taken; a call
// without an id, or whose id no receipt has left, by one with its tool name
// and input hash, in order. Each receipt accounts for one call: a call id
// the record holds twice needs two receipts.
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
	take := func(q []int) ([]int, bool) {
		for len(q) > 0 {
			i := q[0]
			q = q[1:]
			if !taken[i] {
				taken[i] = true
				return q, true
			}
		}
		return q, false
	}
	var out []Call
	for _, c := range calls {
		ok := false
		if c.ID != "" {
			byID[c.ID], ok = take(byID[c.ID])
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
			if _, ok = take(cand); !ok {
				out = append(out, c)
			}
		}
	}
	return out
}
