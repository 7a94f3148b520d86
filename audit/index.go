package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/internal/strictjson"
)

// An IssuerIndex lists, for each issuer, the log entries it signed, in log
// order. It is built by reading the log (every entry verified, the root
// recomputed), so it is exactly what the log holds up to its size.
//
// One goroutine adds entries (Scan's visit) and may Truncate; any number
// may read at the same time. A reader that asks for the entries below a
// size it saw verified gets exactly those, however far the writer has read.
type IssuerIndex struct {
	// mu guards size and the entries map; the entries of a slice below
	// its length are never written again.
	mu      sync.RWMutex
	size    uint64
	entries map[string][]IndexEntry
}

// An IndexEntry is one entry of an issuer in the log.
type IndexEntry struct {
	Index          uint64 `json:"index"`
	IssuerSequence int64  `json:"issuer_sequence,omitempty"`
	Session        string `json:"session,omitempty"`
	Sequence       int64  `json:"sequence,omitempty"`
	// HighWater is an issuer checkpoint's issuer_high_water.
	HighWater int64 `json:"issuer_high_water,omitempty"`
	// Leaf and InclusionProof are filled in by Prove.
	Leaf           string   `json:"leaf,omitempty"`
	InclusionProof []string `json:"inclusion_proof,omitempty"`
}

// NewIssuerIndex returns an empty index.
func NewIssuerIndex() *IssuerIndex {
	return &IssuerIndex{entries: make(map[string][]IndexEntry)}
}

// Add is Scan's visit function.
func (x *IssuerIndex) Add(r *Record, bad *BadEntry) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.size++
	if r == nil {
		return nil
	}
	e := IndexEntry{Index: r.Index, IssuerSequence: r.IssuerSequence, Session: r.Session, Sequence: r.Sequence}
	if r.LifecycleEvent == "issuer_checkpoint" {
		e.HighWater = r.IssuerHighWater
	}
	x.entries[r.Issuer] = append(x.entries[r.Issuer], e)
	return nil
}

// Truncate forgets the entries at and after size, as after a scan that
// failed: the index is then what the log held at size.
func (x *IssuerIndex) Truncate(size uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if size >= x.size {
		return
	}
	for kid, es := range x.entries {
		if n := entriesBelow(es, size); n == 0 {
			delete(x.entries, kid)
		} else {
			x.entries[kid] = es[:n:n] // appends reallocate: readers keep theirs
		}
	}
	x.size = size
}

func entriesBelow(es []IndexEntry, size uint64) int {
	n, _ := slices.BinarySearchFunc(es, size, func(e IndexEntry, s uint64) int {
		switch {
		case e.Index < s:
			return -1
		case e.Index > s:
			return 1
		}
		return 0
	})
	return n
}

// Size is the number of log entries indexed.
func (x *IssuerIndex) Size() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.size
}

// Issuers returns the issuers in the index, sorted.
func (x *IssuerIndex) Issuers() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return sortedKeys(x.entries)
}

// Entries returns the entries of issuer, in log order.
func (x *IssuerIndex) Entries(issuer string) []IndexEntry {
	return x.EntriesBelow(issuer, ^uint64(0))
}

// EntriesBelow returns the entries of issuer at indexes below size, in log
// order. The caller must not modify them.
func (x *IssuerIndex) EntriesBelow(issuer string, size uint64) []IndexEntry {
	x.mu.RLock()
	es := x.entries[issuer]
	x.mu.RUnlock()
	return es[:entriesBelow(es, size)]
}

// An IssuerCount is an issuer and how many entries it has in the log.
type IssuerCount struct {
	KID     string
	Entries int
}

// Top returns the n issuers with the most entries below size, most first
// (ties by kid), and how many issuers have entries below size.
func (x *IssuerIndex) Top(n int, size uint64) (top []IssuerCount, issuers int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	less := func(a, b IssuerCount) int {
		if a.Entries != b.Entries {
			return b.Entries - a.Entries
		}
		if a.KID < b.KID {
			return -1
		}
		return 1
	}
	for kid, es := range x.entries {
		c := IssuerCount{kid, entriesBelow(es, size)}
		if c.Entries == 0 {
			continue
		}
		issuers++
		if len(top) == n && less(c, top[n-1]) > 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, c, less)
		top = slices.Insert(top, i, c)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top, issuers
}

// An IssuerIndexProof is the verifiable index of one issuer: every entry of
// the issuer in the log under Checkpoint, each with its leaf and inclusion
// proof. VerifyIssuerIndex checks it with the log's public key alone.
type IssuerIndexProof struct {
	Issuer     string       `json:"issuer"`
	Checkpoint string       `json:"checkpoint"`
	Entries    []IndexEntry `json:"entries"`
}

// Prove returns the verifiable index of issuer under the signed checkpoint
// cp of size x.Size(), reading leaves and proofs through f.
func (x *IssuerIndex) Prove(ctx context.Context, f Fetcher, issuer string, cp []byte) (*IssuerIndexProof, error) {
	size := x.Size()
	p := &IssuerIndexProof{Issuer: issuer, Checkpoint: string(cp), Entries: slices.Clone(x.EntriesBelow(issuer, size))}
	pr := newProver(f, size)
	for i := range p.Entries {
		if err := pr.prove(ctx, &p.Entries[i]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// WriteIndexProof writes the verifiable index of issuer, whose entries
// below size are entries, under the signed checkpoint cp of that size, as
// one JSON IssuerIndexProof, proving one entry at a time: its memory does
// not grow with the number of entries. Nothing is written until the first
// entry is proven, so that an error before then leaves w untouched;
// started is whether anything was.
func WriteIndexProof(ctx context.Context, w io.Writer, f Fetcher, issuer string, cp []byte, size uint64, entries []IndexEntry) (started bool, err error) {
	head, _ := json.Marshal(IssuerIndexProof{Issuer: issuer, Checkpoint: string(cp)})
	head = append(head[:len(head)-len(`null}`)], '[')
	pr := newProver(f, size)
	for i, e := range entries {
		if err := pr.prove(ctx, &e); err != nil {
			return started, err
		}
		b, _ := json.Marshal(e)
		if i == 0 {
			b = append(head, b...)
		} else {
			b = append([]byte{','}, b...)
		}
		started = true
		if _, err := w.Write(b); err != nil {
			return started, err
		}
	}
	if !started {
		head = append(head, ']', '}', '\n')
	} else {
		head = []byte("]}\n")
	}
	_, err = w.Write(head)
	return true, err
}

// A prover reads leaves and builds inclusion proofs of entries of the tree
// of size size, reading each entry bundle once when asked in log order.
type prover struct {
	f       Fetcher
	size    uint64
	pb      *client.ProofBuilder
	bundle  uint64
	entries [][]byte
}

func newProver(f Fetcher, size uint64) *prover { return &prover{f: f, size: size} }

func (p *prover) prove(ctx context.Context, e *IndexEntry) (err error) {
	e.Leaf, e.InclusionProof, err = p.entry(ctx, e.Index)
	return err
}

// entry returns the leaf at idx and its inclusion proof.
func (p *prover) entry(ctx context.Context, idx uint64) (leaf string, inclusion []string, err error) {
	if idx >= p.size {
		return "", nil, fmt.Errorf("entry %d is beyond the tree of size %d", idx, p.size)
	}
	if p.pb == nil {
		if p.pb, err = NewProofBuilder(ctx, p.f, p.size); err != nil {
			return "", nil, err
		}
	}
	if b := idx / layout.EntryBundleWidth; p.entries == nil || b != p.bundle {
		entries, err := readBundle(ctx, p.f, b, p.size)
		if err != nil {
			return "", nil, err
		}
		p.bundle, p.entries = b, entries
	}
	hashes, err := p.pb.InclusionProof(ctx, idx)
	if err != nil {
		return "", nil, fmt.Errorf("inclusion proof for %d: %w", idx, err)
	}
	return string(p.entries[idx%layout.EntryBundleWidth]), b64s(hashes), nil
}

// IndexSummary is what VerifyIssuerIndex establishes.
type IndexSummary struct {
	Entries int `json:"entries"`
	// Complete is the issuer_sequence up to which the issuer's logged
	// receipts are contiguous (1..Complete all present).
	Complete int64 `json:"complete"`
	// HighWater is the highest issuer_high_water of the issuer's own
	// issuer_checkpoint receipts in the index: Complete >= HighWater means
	// nothing the issuer counted up to then is missing.
	HighWater int64 `json:"high_water"`
	// Legacy counts entries without issuer_sequence, whose completeness
	// cannot be judged.
	Legacy int `json:"legacy"`
	// Gaps are the ranges of issuer_sequence numbers missing below the
	// highest present, in order: one per run of missing numbers, however
	// long, so that a summary is as large as the index at most.
	Gaps []Gap `json:"gaps"`
}

// A Gap is a run of missing numbers, From to To inclusive.
type Gap struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

func (g Gap) String() string {
	if g.From == g.To {
		return fmt.Sprint(g.From)
	}
	return fmt.Sprintf("%d-%d", g.From, g.To)
}

// Summarize is what an offline verifier of the index of entries (as an
// IssuerIndex lists them) concludes: VerifyIssuerIndex's summary.
func Summarize(entries []IndexEntry) *IndexSummary {
	s := &IndexSummary{Entries: len(entries)}
	seqs := make([]int64, 0, len(entries))
	for _, e := range entries {
		if e.IssuerSequence <= 0 {
			s.Legacy++
			continue
		}
		seqs = append(seqs, e.IssuerSequence)
		s.HighWater = max(s.HighWater, e.HighWater)
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	if len(seqs) > 0 {
		s.Gaps = missing(seqs, seqs[len(seqs)-1])
	}
	s.Complete = int64(len(seqs))
	if len(s.Gaps) > 0 {
		s.Complete = s.Gaps[0].From - 1
	}
	return s
}

// missing returns the runs of numbers in [1, top] absent from seqs, which
// is sorted, without duplicates, and positive. Its time and memory are
// those of seqs, whatever the numbers.
func missing(seqs []int64, top int64) []Gap {
	var gaps []Gap
	next := int64(1) // the lowest number not yet accounted for
	for _, n := range seqs {
		if n > top {
			break
		}
		if n > next {
			gaps = append(gaps, Gap{next, n - 1})
		}
		next = n + 1 // n <= top, which is at most MaxInt64 - 1 past here
		if n == top {
			return gaps
		}
	}
	if next <= top {
		gaps = append(gaps, Gap{next, top})
	}
	return gaps
}

// VerifyIssuerIndex checks an issuer index: the checkpoint is signed by the
// log key, every entry is included in it, is a valid entry signed by the
// issuer, and its members are as listed; then it reports how far the
// issuer's own counter shows the index complete. An index with two members
// whose names differ only in case, or a member it does not define, does
// not verify.
func VerifyIssuerIndex(b []byte, logKey note.Verifier) (*IndexSummary, error) {
	var p IssuerIndexProof
	if err := strictjson.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEvidence, err)
	}
	cp, err := parseCheckpoint(p.Checkpoint, logKey)
	if err != nil {
		return nil, err
	}
	listed := make([]IndexEntry, 0, len(p.Entries))
	last := int64(-1)
	for _, e := range p.Entries {
		if int64(e.Index) <= last {
			return nil, fmt.Errorf("%w: entries are not in log order at %d", ErrBadEvidence, e.Index)
		}
		last = int64(e.Index)
		hashes, err := unb64s(e.InclusionProof)
		if err != nil {
			return nil, err
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, e.Index, cp.Size, leafHash([]byte(e.Leaf)), hashes, cp.Hash); err != nil {
			return nil, fmt.Errorf("%w: entry %d is not included in the checkpoint: %v", ErrBadEvidence, e.Index, err)
		}
		r, err := parseRecord(e.Index, []byte(e.Leaf))
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %v", ErrBadEvidence, e.Index, err)
		}
		var hw int64
		if r.LifecycleEvent == "issuer_checkpoint" {
			hw = r.IssuerHighWater
		}
		if r.Issuer != p.Issuer || r.IssuerSequence != e.IssuerSequence || r.Session != e.Session || r.Sequence != e.Sequence || hw != e.HighWater {
			return nil, fmt.Errorf("%w: entry %d is not as listed", ErrBadEvidence, e.Index)
		}
		listed = append(listed, IndexEntry{Index: e.Index, IssuerSequence: r.IssuerSequence, HighWater: hw})
	}
	return Summarize(listed), nil
}
