package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/transparency-dev/tessera/api/layout"

	"github.com/docketlog/docket/receipts"
)

// reconciliationFindings reports what the reconciliation of sessions with
// their agents' records signed (package reconcile, DESIGN §3.1): every
// selected logged unmediated_call receipt is a finding, its entry the
// evidence (the issuer itself signed that the agent's record holds a call
// the gate never decided). With requireReconciled, a selected session is a
// finding (unreconciled) unless its session_end carries the
// transcript_hash of a record read whole: a session still open, or ended
// without reading the record, or with a record that could not be read.
//
// The facts are the recs' flags; the members a message names (tool, call
// id, position, the transcript_hash of a record not read) are read again
// from the log (rd), for the findings listed only: at most MaxPerKind of
// each kind. With requireReconciled it keeps 8 bytes per session. It runs
// after analyse, which marks duplicates.
func (l *ledger) reconciliationFindings(ctx context.Context, rd *rereader, s *selection, requireReconciled bool, out *findingList) error {
	for i := range l.recs {
		r := &l.recs[i]
		if r.flags&flagUnmediated == 0 || r.flags&flagDuplicate != 0 || !l.selected(s, r) {
			continue
		}
		idx := uint64(i)
		f := Finding{Kind: KindUnmediatedCall, Issuer: l.issuers[r.issuer].kid, Session: l.sessions[r.session].name, Sequence: r.seq, Index: idx,
			records: []*Record{{Index: idx}}}
		if out.listed(f.Kind) {
			rr, err := rd.record(ctx, idx)
			if err != nil {
				return err
			}
			f.Message = UnmediatedMessage(rr.Session, rr.Sequence, rr.Payload)
		}
		out.add(f)
	}
	if !requireReconciled {
		return nil
	}
	// ends[id] is 1 + the index of session id's last session_end.
	ends := make([]uint64, len(l.sessions))
	for i := range l.recs {
		if r := &l.recs[i]; r.flags&flagSessionEnd != 0 && r.flags&(flagIssuerCP|flagDuplicate) == 0 && l.selected(s, r) {
			ends[r.session] = uint64(i) + 1
		}
	}
	for _, id := range l.selectedSessions(s) {
		ss := &l.sessions[id]
		idx, seq := ss.last, ss.lastSeq
		var why string
		if ends[id] == 0 {
			why = "it has no session_end"
		} else {
			idx = ends[id] - 1
			e := &l.recs[idx]
			seq = e.seq
			switch {
			case e.flags&flagTranscript == 0:
				why = fmt.Sprintf("its session_end (sequence %d) records no reconciliation (transcript_hash)", seq)
			case e.flags&flagReconciled == 0:
				why = fmt.Sprintf("its session_end (sequence %d) says the agent's record was not read whole", seq)
				if out.listed(KindUnreconciled) {
					rr, err := rd.record(ctx, idx)
					if err != nil {
						return err
					}
					why += ": " + rr.TranscriptHash
				}
			default:
				continue
			}
		}
		out.add(Finding{Kind: KindUnreconciled, Issuer: l.issuers[ss.issuer].kid, Session: ss.name, Sequence: seq, Index: idx,
			Message: fmt.Sprintf("session %q is not reconciled with its agent's record: %s", ss.name, why)})
	}
	return nil
}

// A rereader reads back, for the message of a finding, a log entry of which
// the ledger keeps only a rec: the bundle holding it (the last one read is
// kept), and the entry parsed and verified again. The log must serve the
// very receipt it served before.
type rereader struct {
	l       *ledger
	f       Fetcher
	size    uint64
	bundle  uint64
	entries [][]byte
}

func (rd *rereader) record(ctx context.Context, idx uint64) (*Record, error) {
	if idx >= rd.size {
		return nil, fmt.Errorf("entry %d is beyond the tree of size %d", idx, rd.size)
	}
	if b := idx / layout.EntryBundleWidth; rd.entries == nil || rd.bundle != b {
		es, err := readBundle(ctx, rd.f, b, rd.size)
		if err != nil {
			return nil, err
		}
		rd.bundle, rd.entries = b, es
	}
	r, err := parseRecord(idx, rd.entries[idx%layout.EntryBundleWidth])
	if err == nil && r.Hash != hashString(rd.l.recs[idx].hash) {
		err = fmt.Errorf("it holds %s, not %s", r.Hash, hashString(rd.l.recs[idx].hash))
	}
	if err != nil {
		return nil, fmt.Errorf("log entry %d, read again, is not the entry read before: %w", idx, err)
	}
	return r, nil
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
