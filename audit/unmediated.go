package audit

import (
	"fmt"
	"strings"

	"github.com/docketlog/docket/receipts"
)

// reconciliationFindings reports what the reconciliation of sessions with
// their agents' records signed (package reconcile, DESIGN §3.1): every
// logged unmediated_call receipt is a finding, its entry the evidence (the
// issuer itself signed that the agent's record holds a call the gate never
// decided). With requireReconciled, a selected session is a finding
// (unreconciled) unless its session_end carries the transcript_hash of a
// record read whole: a session still open, or ended without reading the
// record, or with a record that could not be read.
func (v *View) reconciliationFindings(requireReconciled bool, out *findingList) {
	for _, r := range v.records {
		if r.HookEvent == receipts.UnmediatedCall {
			out.add(Finding{Kind: KindUnmediatedCall, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
				Message: UnmediatedMessage(r.Session, r.Sequence, r.Payload), records: []*Record{r}})
		}
	}
	if !requireReconciled {
		return
	}
	for _, k := range sortedSessionKeys(v.sessions) {
		ss := v.sessions[k]
		var why string
		switch e := ss.ended; {
		case e == nil:
			why = "it has no session_end"
		case e.TranscriptHash == "":
			why = fmt.Sprintf("its session_end (sequence %d) records no reconciliation (transcript_hash)", e.Sequence)
		case !strings.HasPrefix(e.TranscriptHash, "sha256:"):
			why = fmt.Sprintf("its session_end (sequence %d) says the agent's record was not read whole: %s", e.Sequence, e.TranscriptHash)
		default:
			continue
		}
		last := ss.last
		if ss.ended != nil {
			last = ss.ended
		}
		out.add(Finding{Kind: KindUnreconciled, Issuer: k.issuer, Session: k.session, Sequence: last.Sequence, Index: last.Index,
			Message: fmt.Sprintf("session %q is not reconciled with its agent's record: %s", k.session, why)})
	}
}

// UnmediatedMessage describes an unmediated_call receipt: the call's tool
// (and MCP server), id, where the agent's record holds it and whether it
// ran.
func UnmediatedMessage(session string, sequence int64, p Payload) string {
	ran := "no result shows it ran"
	if p.ToolRan {
		ran = "a result shows it ran"
	}
	server := ""
	if rest, ok := strings.CutPrefix(p.ToolName, "mcp__"); ok {
		s, _, _ := strings.Cut(rest, "__")
		server = fmt.Sprintf(" to MCP server %q, through neither a hook nor docket mcp", s)
	}
	return fmt.Sprintf("session %q: receipt %d: the agent's record holds a call of %s%s (id %q, at %s) that the gate never decided; %s",
		session, sequence, p.ToolName, server, p.ToolUseID, p.TranscriptPosition, ran)
}

// verifyUnmediated checks unmediated_call evidence: one logged entry, an
// unmediated_call its issuer signed.
func verifyUnmediated(ev *Evidence, entries []*receipts.Entry, need func(int) error) (string, error) {
	if err := need(1); err != nil {
		return "", err
	}
	p := payloadOf(entries[0])
	if p.HookEvent != receipts.UnmediatedCall {
		return "", fmt.Errorf("%w: entry %d is a %q receipt, not an unmediated_call", ErrNotProven, ev.Entries[0].Index, p.HookEvent)
	}
	return fmt.Sprintf("issuer %s signed, in the log at index %d: %s", entries[0].KID, ev.Entries[0].Index,
		UnmediatedMessage(entries[0].SessionID, p.Sequence, p)), nil
}
