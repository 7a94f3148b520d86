package audit

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docketlog/docket/internal/plural"
)

// Kinds of finding. Each is a violation (exit 1 in docket audit) unless the
// Finding is a Notice.
const (
	KindInvalidReceipt    = "invalid_receipt"     // a presented receipt fails verification
	KindDropped           = "dropped"             // presented, but not in the log
	KindWithheld          = "withheld"            // in the log, but not presented
	KindEquivocation      = "equivocation"        // two receipts for one issuer and sequence
	KindIssuerSequenceGap = "issuer_sequence_gap" // an issuer's logged receipts skip a number
	KindBelowHighWater    = "below_high_water"    // absent, though an issuer checkpoint counts it
	KindChainBreak        = "chain_break"         // logged receipts that do not link
	KindUnlinkedExecution = "unlinked_execution"  // an execution without an allow of the same call
	KindExecutedDeny      = "executed_deny"       // an execution of a deny decision
	KindOpenSession       = "open_session"        // notice: no session_end
	KindBadEntry          = "bad_entry"           // a log entry that is not a valid Docket entry
	KindRootMismatch      = "root_mismatch"       // entries that do not hash to the signed root
	KindFork              = "fork"                // two inconsistent checkpoints of one log
	KindWitnessSplitView  = "witness_split_view"  // a witness holds a checkpoint inconsistent with the log's
	KindUndecidedLegacy   = "undecided_legacy"    // notice: receipts without issuer_sequence
	KindUnknownIssuer     = "unknown_issuer"      // an issuer outside the trusted keys
	KindStaleLog          = "stale_log"           // the log's checkpoint stopped growing or timestamps
	KindDenyDecision      = "deny_decision"       // notice (opt-in): a logged deny
	KindUnenforced        = "unenforced"          // notice: decisions observe mode did not enforce (unenforced.go)
	KindUnmediatedCall    = "unmediated_call"     // a call in the agent's record the gate never decided
	KindUnreconciled      = "unreconciled"        // (RequireReconciled) a session whose end records no reconciled transcript
)

// A Finding is one result of an audit or a monitor poll.
type Finding struct {
	Kind     string `json:"kind"`
	Notice   bool   `json:"notice,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	Session  string `json:"session,omitempty"`
	Sequence int64  `json:"sequence,omitempty"`
	// Index is the log index of the entry the finding is about, if any.
	Index   uint64 `json:"index,omitempty"`
	Source  string `json:"source,omitempty"` // the presented file, if any
	Message string `json:"message"`
	// Count is how many log entries (or presented receipts) the finding
	// stands for, when more than one: the entries of an unknown issuer or
	// of a withheld session, or the findings a summary counts.
	Count int `json:"count,omitempty"`
	// EvidenceFile is where the evidence was written, if it was.
	EvidenceFile string `json:"evidence,omitempty"`

	records  []*Record
	evidence *Evidence
}

// MaxPerKind is how many findings of one kind an audit or a monitor poll
// lists, each with its evidence file (and -exec run); the others of that
// kind are counted in one summary finding. Whoever can write to the log, or
// sign receipts, then makes a reader do and keep at most this much per kind,
// however many entries they write.
const MaxPerKind = 100

// A findingList collects findings, listing at most MaxPerKind of a kind and
// counting the rest.
type findingList struct {
	list    []Finding
	perKind map[string]int
	// more counts, per kind, the findings not listed, and entries the log
	// entries or receipts they stand for.
	more    map[string]*Finding
	entries map[string]int
}

func (l *findingList) init() {
	if l.perKind == nil {
		l.perKind, l.more, l.entries = make(map[string]int), make(map[string]*Finding), make(map[string]int)
	}
}

func (l *findingList) add(fs ...Finding) {
	l.init()
	for _, f := range fs {
		l.perKind[f.Kind]++
		if l.perKind[f.Kind] <= MaxPerKind {
			l.list = append(l.list, f)
			continue
		}
		m := l.more[f.Kind]
		if m == nil {
			m = &Finding{Kind: f.Kind, Notice: f.Notice}
			l.more[f.Kind] = m
		}
		m.Count++
		l.entries[f.Kind] += max(f.Count, 1)
	}
}

// listed reports whether the next finding of kind added will be listed,
// not only counted: only a listed finding needs a message.
func (l *findingList) listed(kind string) bool { return l.perKind[kind] < MaxPerKind }

// count is the number of findings added.
func (l *findingList) count() int {
	n := 0
	for _, c := range l.perKind {
		n += c
	}
	return n
}

// merge adds the findings of o, listed and counted.
func (l *findingList) merge(o *findingList) {
	l.init()
	l.add(o.list...)
	for kind, m := range o.more {
		l.perKind[kind] += m.Count
		if l.more[kind] == nil {
			l.more[kind] = &Finding{Kind: kind, Notice: m.Notice}
		}
		l.more[kind].Count += m.Count
		l.entries[kind] += o.entries[kind]
	}
}

// deleteFunc removes the listed findings for which del is true.
func (l *findingList) deleteFunc(del func(Finding) bool) {
	l.list = slices.DeleteFunc(l.list, del)
}

// all returns the listed findings, then one summary per kind that had more.
func (l *findingList) all() []Finding {
	out := l.list
	for _, kind := range sortedKeys(l.more) {
		m := *l.more[kind]
		m.Message = fmt.Sprintf("%s (%s or receipts) not listed: only the first %d of a kind are, with evidence; narrow the selection (-issuer, -session) to see them",
			plural.Count(m.Count, "more "+kind+" finding"), plural.Count(l.entries[kind], "log entry"), MaxPerKind)
		m.Count = l.entries[kind]
		out = append(out, m)
	}
	return out
}

func (f Finding) String() string {
	if f.Notice {
		return "notice: " + f.Message
	}
	return f.Kind + ": " + f.Message
}

// Evidence is a self-contained, JSON-encoded proof of a finding about a log:
// the signed checkpoints, the log entries with their inclusion proofs, and
// for a fork the consistency proof. VerifyEvidence checks it with the log's
// public key alone.
type Evidence struct {
	Kind    string `json:"kind"`
	Message string `json:"message,omitempty"`
	// Checkpoint is the signed checkpoint note the entries are included in.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Entries are log entries (JCS leaves) with their inclusion proofs
	// against Checkpoint.
	Entries []EvidenceEntry `json:"entries,omitempty"`
	// Checkpoints and ConsistencyProof are a fork's: two signed checkpoints
	// of one log, and the proof (or its absence, for equal sizes) that fails.
	Checkpoints      []string `json:"checkpoints,omitempty"`
	ConsistencyProof []string `json:"consistency_proof,omitempty"`
	// TreeLeafHash is a root mismatch's: the leaf hash the signed tree holds
	// at Entries[0].Index, which Entries[0].InclusionProof proves, while
	// Entries[0].Leaf is the entry the log served there instead.
	TreeLeafHash string `json:"tree_leaf_hash,omitempty"`
}

// An EvidenceEntry is one log entry in evidence.
type EvidenceEntry struct {
	Index uint64 `json:"index"`
	// Leaf is the entry exactly as logged: JCS of {"public_key","receipt"}.
	// An entry that is not UTF-8 (a log that accepts anything may hold
	// one) cannot be a JSON string: LeafBase64 holds it instead, and Leaf
	// is empty.
	Leaf           string   `json:"leaf"`
	LeafBase64     string   `json:"leaf_base64,omitempty"`
	InclusionProof []string `json:"inclusion_proof,omitempty"`
}

// newEvidenceEntry is the evidence entry of leaf at idx.
func newEvidenceEntry(idx uint64, leaf string, proof []string) EvidenceEntry {
	if utf8.ValidString(leaf) {
		return EvidenceEntry{Index: idx, Leaf: leaf, InclusionProof: proof}
	}
	return EvidenceEntry{Index: idx, LeafBase64: base64.StdEncoding.EncodeToString([]byte(leaf)), InclusionProof: proof}
}

// Bytes returns the entry's leaf bytes.
func (e EvidenceEntry) Bytes() ([]byte, error) {
	if e.LeafBase64 == "" {
		return []byte(e.Leaf), nil
	}
	b, err := base64.StdEncoding.DecodeString(e.LeafBase64)
	if err != nil || e.Leaf != "" || utf8.Valid(b) {
		return nil, fmt.Errorf("%w: entry %d: leaf_base64 must be the base64 of a leaf that is not UTF-8, with no leaf", ErrBadEvidence, e.Index)
	}
	return b, nil
}

// prove fills in the evidence of findings that name log entries (each
// entry with its inclusion proof against the signed checkpoint cp of size
// size), one finding at a time, and hands each to write, after which the
// finding keeps none of it: a reader holds the leaves of one finding at a
// time, not of all.
func prove(ctx context.Context, f Fetcher, cp []byte, size uint64, findings []Finding, write func(*Finding) error) error {
	pr := newProver(f, size)
	for i := range findings {
		fd := &findings[i]
		if len(fd.records) == 0 && fd.evidence == nil {
			continue
		}
		if fd.evidence == nil {
			fd.evidence = &Evidence{Kind: fd.Kind}
		}
		fd.evidence.Message = fd.Message
		fd.evidence.Checkpoint = string(cp)
		idxs := make([]uint64, 0, len(fd.records)+len(fd.evidence.Entries))
		for _, e := range fd.evidence.Entries {
			idxs = append(idxs, e.Index)
		}
		fd.evidence.Entries = fd.evidence.Entries[:0]
		for _, r := range fd.records {
			idxs = append(idxs, r.Index)
		}
		for _, idx := range idxs {
			leaf, proof, err := pr.entry(ctx, idx)
			if err != nil {
				return err
			}
			fd.evidence.Entries = append(fd.evidence.Entries, newEvidenceEntry(idx, leaf, proof))
		}
		if err := write(fd); err != nil {
			return err
		}
		fd.evidence, fd.records = nil, nil
	}
	return nil
}

func b64s(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h)
	}
	return out
}

// Report renders findings for people, one line each, violations first.
func Report(findings []Finding) string {
	var b strings.Builder
	for _, notice := range []bool{false, true} {
		for _, f := range findings {
			if f.Notice == notice {
				b.WriteString(f.String())
				if f.EvidenceFile != "" {
					b.WriteString(" (evidence: " + f.EvidenceFile + ")")
				}
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}
