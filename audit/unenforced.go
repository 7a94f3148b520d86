package audit

import (
	"fmt"
	"strings"

	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/receipts"
)

// unenforcedFindings reports, once per session, the selected logged
// decisions that observe mode did not enforce ("enforced": false): the
// policy denied or asked, and the call was answered as allowed. They are
// notices, not violations: the issuer signed them as such, and an execution
// linking one is not an executed_deny (analyse). They say what the policy
// would have stopped. They are read from the recs' flags; it keeps ~64
// bytes per session that has such decisions. It runs after analyse, which
// marks duplicates.
func (l *ledger) unenforcedFindings(s *selection, out *findingList) {
	type key struct{ issuer, session uint32 }
	type tally struct {
		first                 uint64
		n, deny, ask, another int
	}
	counts := make(map[key]*tally)
	var order []key
	const want = flagUnenforced | flagPreToolUse
	for i := range l.recs {
		r := &l.recs[i]
		if r.flags&want != want || r.flags&flagDuplicate != 0 || !l.selected(s, r) {
			continue
		}
		k := key{r.issuer, r.session}
		t := counts[k]
		if t == nil {
			t = &tally{first: uint64(i)}
			counts[k] = t
			order = append(order, k)
		}
		t.n++
		switch {
		case r.flags&flagDeny != 0:
			t.deny++
		case r.flags&flagApproval != 0:
			t.ask++
		default:
			t.another++
		}
	}
	for _, k := range order {
		t := counts[k]
		var parts []string
		for _, c := range []struct {
			n    int
			what string
		}{{t.deny, receipts.Deny}, {t.ask, receipts.RequireApproval}, {t.another, "with another decision"}} {
			if c.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
			}
		}
		session, seq := l.sessions[k.session].name, l.recs[t.first].seq
		out.add(Finding{Kind: KindUnenforced, Notice: true, Issuer: l.issuers[k.issuer].kid, Session: session, Sequence: seq,
			Index: t.first, Count: t.n,
			Message: fmt.Sprintf("session %q: %s not enforced (observe mode: %s answered as allow), first at sequence %d; the policy would have stopped these calls",
				session, plural.Count(t.n, "decision"), strings.Join(parts, ", "), seq)})
	}
}
