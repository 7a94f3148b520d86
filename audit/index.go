package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// An IssuerIndex lists, for each issuer, the log entries it signed, in log
// order. It is built by reading the log (every entry verified, the root
// recomputed), so it is exactly what the log holds up to its size.
// It is not safe for concurrent use.
type IssuerIndex struct {
	size    uint64
	entries map[string][]IndexEntry
}

// An IndexEntry is one entry of an issuer in the log.
type IndexEntry struct {
	Index          uint64 `json:"index"`
	IssuerSequence int64  `json:"issuer_sequence,omitempty"`
	Session        string `json:"session,omitempty"`
	Sequence       int64  `json:"sequence,omitempty"`
	HighWater      int64  `json:"issuer_high_water,omitempty"`
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
	x.size++
	if r == nil {
		return nil
	}
	x.entries[r.Issuer] = append(x.entries[r.Issuer], IndexEntry{Index: r.Index, IssuerSequence: r.IssuerSequence,
		Session: r.Session, Sequence: r.Sequence, HighWater: r.IssuerHighWater})
	return nil
}

// Size is the number of log entries indexed.
func (x *IssuerIndex) Size() uint64 { return x.size }

// Issuers returns the issuers in the index, sorted.
func (x *IssuerIndex) Issuers() []string { return sortedKeys(x.entries) }

// Entries returns the entries of issuer, in log order.
func (x *IssuerIndex) Entries(issuer string) []IndexEntry { return x.entries[issuer] }

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
	p := &IssuerIndexProof{Issuer: issuer, Checkpoint: string(cp), Entries: slices.Clone(x.entries[issuer])}
	if len(p.Entries) == 0 {
		return p, nil
	}
	pb, err := client.NewProofBuilder(ctx, x.size, f.ReadTile)
	if err != nil {
		return nil, err
	}
	for i := range p.Entries {
		e := &p.Entries[i]
		leaf, err := readLeaf(ctx, f, e.Index, x.size)
		if err != nil {
			return nil, err
		}
		hashes, err := pb.InclusionProof(ctx, e.Index)
		if err != nil {
			return nil, fmt.Errorf("inclusion proof for %d: %w", e.Index, err)
		}
		e.Leaf, e.InclusionProof = string(leaf), b64s(hashes)
	}
	return p, nil
}

// IndexSummary is what VerifyIssuerIndex establishes.
type IndexSummary struct {
	Entries int
	// Complete is the issuer_sequence up to which the issuer's logged
	// receipts are contiguous (1..Complete all present).
	Complete int64
	// HighWater is the highest issuer_high_water of the issuer's own
	// issuer_checkpoint receipts in the index: Complete >= HighWater means
	// nothing the issuer counted up to then is missing.
	HighWater int64
	// Gaps are issuer_sequence numbers missing below the highest present.
	Gaps []int64
	// Legacy counts entries without issuer_sequence, whose completeness
	// cannot be judged.
	Legacy int
}

// VerifyIssuerIndex checks an issuer index: the checkpoint is signed by the
// log key, every entry is included in it, is a valid entry signed by the
// issuer, and its members are as listed; then it reports how far the
// issuer's own counter shows the index complete.
func VerifyIssuerIndex(b []byte, logKey note.Verifier) (*IndexSummary, error) {
	var p IssuerIndexProof
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEvidence, err)
	}
	cp, err := parseCheckpoint(p.Checkpoint, logKey)
	if err != nil {
		return nil, err
	}
	s := &IndexSummary{Entries: len(p.Entries)}
	seen := make(map[int64]bool)
	var top int64
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
		if r.Issuer != p.Issuer || r.IssuerSequence != e.IssuerSequence || r.Session != e.Session || r.Sequence != e.Sequence {
			return nil, fmt.Errorf("%w: entry %d is not as listed", ErrBadEvidence, e.Index)
		}
		if r.IssuerSequence == 0 {
			s.Legacy++
			continue
		}
		seen[r.IssuerSequence] = true
		top = max(top, r.IssuerSequence)
		if r.LifecycleEvent == "issuer_checkpoint" {
			s.HighWater = max(s.HighWater, r.IssuerHighWater)
		}
	}
	for n := int64(1); n <= top; n++ {
		if !seen[n] {
			s.Gaps = append(s.Gaps, n)
		} else if len(s.Gaps) == 0 {
			s.Complete = n
		}
	}
	return s, nil
}
