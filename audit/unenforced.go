package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// unenforcedFindings reports, once per session, the logged decisions that
// observe mode did not enforce ("enforced": false): the policy denied or
// asked, and the call was answered as allowed. They are notices, not
// violations: the issuer signed them as such, and an execution linking one
// is not an executed_deny. They say what the policy would have stopped.
func unenforcedFindings(v *View, out *findingList) {
	type key struct{ issuer, session string }
	type tally struct {
		first     *Record
		n         int
		decisions map[string]int
	}
	counts := make(map[key]*tally)
	var order []key
	for _, r := range v.records {
		if !r.Unenforced || r.HookEvent != "PreToolUse" {
			continue
		}
		k := key{r.Issuer, r.Session}
		t := counts[k]
		if t == nil {
			t = &tally{first: r, decisions: make(map[string]int)}
			counts[k] = t
			order = append(order, k)
		}
		t.n++
		t.decisions[r.Decision]++
	}
	for _, k := range order {
		t := counts[k]
		var parts []string
		for _, d := range slices.Sorted(maps.Keys(t.decisions)) {
			parts = append(parts, fmt.Sprintf("%d %s", t.decisions[d], d))
		}
		out.add(Finding{Kind: KindUnenforced, Notice: true, Issuer: k.issuer, Session: k.session, Sequence: t.first.Sequence,
			Index: t.first.Index, Count: t.n,
			Message: fmt.Sprintf("session %q: %d decisions not enforced (observe mode: %s answered as allow), first at sequence %d; the policy would have stopped these calls",
				k.session, t.n, strings.Join(parts, ", "), t.first.Sequence)})
	}
}
