package audit

import (
	"fmt"
	"slices"
	"strings"
)

// A View indexes what an audit read back from a log: every logged receipt
// by hash, by (issuer, session, sequence) and by (issuer, issuer_sequence),
// and the findings that need only the log: bad entries, equivocation, chain
// breaks between logged receipts, unlinked executions. It is not safe for
// concurrent use; Add is called in index order (Scan's visit).
type View struct {
	// Issuers and Sessions, when non-empty, select what is kept and checked;
	// equivocation and bad entries are found in the whole log regardless.
	Issuers  map[string]bool
	Sessions map[string]bool

	byHash      map[string]*Record
	bySeq       map[seqKey]*Record
	byIssuerSeq map[seqKey]*Record
	issuers     map[string]*issuerState
	sessions    map[seqKey]*sessionState // key with Sequence 0
	records     []*Record                // the selected records, in index order
	findings    findingList
	size        uint64
}

type seqKey struct {
	issuer, session string
	seq             int64
}

type issuerState struct {
	maxSeq     int64 // highest issuer_sequence logged
	highWater  int64 // highest issuer_high_water of a logged issuer checkpoint
	checkpoint *Record
	seqs       []int64 // the issuer_sequence numbers logged, in log order
	legacy     int     // receipts without issuer_sequence
}

type sessionState struct {
	last  *Record
	ended *Record
}

// NewView returns an empty view.
func NewView() *View {
	return &View{
		byHash:      make(map[string]*Record),
		bySeq:       make(map[seqKey]*Record),
		byIssuerSeq: make(map[seqKey]*Record),
		issuers:     make(map[string]*issuerState),
		sessions:    make(map[seqKey]*sessionState),
	}
}

// Size is the number of log entries the view has read.
func (v *View) Size() uint64 { return v.size }

// Lookup returns the logged receipt with chain hash h.
func (v *View) Lookup(h string) (*Record, bool) {
	r, ok := v.byHash[h]
	return r, ok
}

func (v *View) selected(r *Record) bool {
	if len(v.Issuers) > 0 && !v.Issuers[r.Issuer] {
		return false
	}
	return len(v.Sessions) == 0 || v.Sessions[r.Session]
}

// Add indexes the next log entry; it is Scan's visit function.
func (v *View) Add(r *Record, bad *BadEntry) error {
	v.size++
	if bad != nil {
		// The evidence reads the entry back: a view keeps no leaf.
		v.findings.add(Finding{
			Kind: KindBadEntry, Index: bad.Index,
			Message:  fmt.Sprintf("log entry %d is not a valid Docket entry: %v", bad.Index, bad.Err),
			evidence: &Evidence{Kind: KindBadEntry, Entries: []EvidenceEntry{{Index: bad.Index}}},
		})
		return nil
	}
	if r.Sequence > 0 {
		k := seqKey{r.Issuer, r.Session, r.Sequence}
		if prev, ok := v.bySeq[k]; ok && prev.Hash != r.Hash {
			v.equivocation(prev, r, fmt.Sprintf("session %q sequence %d", r.Session, r.Sequence))
		} else if !ok {
			v.bySeq[k] = r
		}
	}
	if r.IssuerSequence > 0 {
		k := seqKey{issuer: r.Issuer, seq: r.IssuerSequence}
		if prev, ok := v.byIssuerSeq[k]; ok && prev.Hash != r.Hash {
			if prev.Session != r.Session || prev.Sequence != r.Sequence || r.Sequence == 0 {
				v.equivocation(prev, r, fmt.Sprintf("issuer_sequence %d", r.IssuerSequence))
			}
		} else if !ok {
			v.byIssuerSeq[k] = r
		}
	}
	if len(v.Issuers) > 0 && !v.Issuers[r.Issuer] {
		return nil
	}
	// The issuer's counter is issuer-wide: it is tracked over all the
	// issuer's sessions, also when only some sessions are selected.
	is := v.issuers[r.Issuer]
	if is == nil {
		is = &issuerState{}
		v.issuers[r.Issuer] = is
	}
	if r.IssuerSequence > 0 {
		is.seqs = append(is.seqs, r.IssuerSequence)
		is.maxSeq = max(is.maxSeq, r.IssuerSequence)
	} else {
		is.legacy++
	}
	if r.LifecycleEvent == "issuer_checkpoint" && r.IssuerHighWater >= is.highWater {
		is.highWater, is.checkpoint = r.IssuerHighWater, r
	}
	if !v.selected(r) {
		return nil
	}
	if _, dup := v.byHash[r.Hash]; dup {
		return nil // strict dedup makes this impossible; the first index stands
	}
	v.byHash[r.Hash] = r
	v.records = append(v.records, r)
	if r.Session != "" && r.LifecycleEvent != "issuer_checkpoint" {
		sk := seqKey{issuer: r.Issuer, session: r.Session}
		ss := v.sessions[sk]
		if ss == nil {
			ss = &sessionState{}
			v.sessions[sk] = ss
		}
		if ss.last == nil || r.Sequence > ss.last.Sequence {
			ss.last = r
		}
		if r.LifecycleEvent == "session_end" {
			ss.ended = r
		}
	}
	return nil
}

func (v *View) equivocation(a, b *Record, what string) {
	v.findings.add(Finding{
		Kind: KindEquivocation, Issuer: a.Issuer, Session: b.Session, Sequence: b.Sequence, Index: b.Index,
		Message: fmt.Sprintf("issuer %s signed two different receipts for %s: log entries %d and %d", a.Issuer, what, a.Index, b.Index),
		records: []*Record{a, b},
	})
}

// LogFindings returns what the log alone shows: bad entries, equivocation,
// gaps in issuer_sequence (up to each issuer's highest logged sequence or
// issuer checkpoint), chain breaks and executions not preceded by a logged
// allow within the selection, and sessions without session_end. At most
// MaxPerKind findings of a kind are listed; one more counts the others.
func (v *View) LogFindings() []Finding {
	var out findingList
	v.logFindings(&out)
	return out.all()
}

func (v *View) logFindings(out *findingList) {
	out.merge(&v.findings)
	for _, issuer := range sortedKeys(v.issuers) {
		is := v.issuers[issuer]
		slices.Sort(is.seqs)
		is.seqs = slices.Compact(is.seqs)
		// Gaps are ranges: their number and cost are those of the entries
		// logged, whatever numbers the issuer wrote in them.
		for _, g := range missing(is.seqs, max(is.maxSeq, is.highWater)) {
			f := Finding{Kind: KindIssuerSequenceGap, Issuer: issuer, Sequence: g.From}
			f.Message = fmt.Sprintf("issuer %s: issuer_sequence %s missing from the log (highest logged %d, issuer checkpoint high-water %d)", issuer, g, is.maxSeq, is.highWater)
			if is.checkpoint != nil && is.highWater >= g.To {
				// The issuer's own checkpoint counts the missing receipts.
				f.records = []*Record{is.checkpoint}
				if g.To >= is.maxSeq {
					f.Kind = KindBelowHighWater
				}
			}
			if r := v.byIssuerSeq[seqKey{issuer: issuer, seq: g.From - 1}]; r != nil {
				f.records = append(f.records, r)
			}
			if g.To < is.maxSeq {
				if r := v.byIssuerSeq[seqKey{issuer: issuer, seq: g.To + 1}]; r != nil {
					f.records = append(f.records, r)
				}
			}
			out.add(f)
		}
	}
	for _, r := range v.records {
		if r.Sequence > 1 {
			if prev := v.bySeq[seqKey{r.Issuer, r.Session, r.Sequence - 1}]; prev != nil && r.PreviousReceiptHash != prev.Hash {
				out.add(Finding{Kind: KindChainBreak, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
					Message: fmt.Sprintf("session %q: logged receipt %d does not link the logged receipt %d", r.Session, r.Sequence, r.Sequence-1),
					records: []*Record{prev, r}})
			}
		}
		if isExecution(r) {
			d := v.byHash[r.DecisionReceiptHash]
			switch {
			case d == nil:
				// Not in the log (yet): the presented chain decides; see Audit.
			case d.Decision == "deny" && !d.Unenforced:
				out.add(Finding{Kind: KindExecutedDeny, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
					Message: fmt.Sprintf("session %q: execution %d executes a deny decision", r.Session, r.Sequence), records: []*Record{d, r}})
			case d.Session != r.Session || d.Sequence >= r.Sequence || d.ToolInputHash != r.ToolInputHash || d.ToolName != r.ToolName:
				out.add(Finding{Kind: KindUnlinkedExecution, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
					Message: fmt.Sprintf("session %q: execution %d does not execute an earlier decision on the same call", r.Session, r.Sequence), records: []*Record{d, r}})
			}
		}
	}
	for _, k := range sortedSessionKeys(v.sessions) {
		ss := v.sessions[k]
		if ss.ended == nil {
			out.add(Finding{Kind: KindOpenSession, Issuer: k.issuer, Session: k.session, Sequence: ss.last.Sequence, Index: ss.last.Index, Notice: true,
				Message: fmt.Sprintf("session %q is open: no session_end; last receipt %d issued %s", k.session, ss.last.Sequence, ss.last.IssuedAt)})
		}
	}
}

func isExecution(r *Record) bool {
	return r.HookEvent == "PostToolUse" || r.HookEvent == "PostToolUseFailure"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedSessionKeys(m map[seqKey]*sessionState) []seqKey {
	keys := make([]seqKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b seqKey) int {
		if a.issuer != b.issuer {
			return strings.Compare(a.issuer, b.issuer)
		}
		return strings.Compare(a.session, b.session)
	})
	return keys
}
