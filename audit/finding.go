package audit

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/transparency-dev/tessera/client"
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
	// EvidenceFile is where the evidence was written, if it was.
	EvidenceFile string `json:"evidence,omitempty"`

	records  []*Record
	evidence *Evidence
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
	Leaf           string   `json:"leaf"`
	InclusionProof []string `json:"inclusion_proof,omitempty"`
}

// prove fills in the evidence of findings that name log entries: each entry
// with its inclusion proof against the signed checkpoint cp of size size.
func prove(ctx context.Context, f Fetcher, cp []byte, size uint64, findings []Finding) error {
	var pb *client.ProofBuilder
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
			if pb == nil {
				var err error
				if pb, err = client.NewProofBuilder(ctx, size, f.ReadTile); err != nil {
					return fmt.Errorf("building proofs: %w", err)
				}
			}
			leaf, err := readLeaf(ctx, f, idx, size)
			if err != nil {
				return err
			}
			hashes, err := pb.InclusionProof(ctx, idx)
			if err != nil {
				return fmt.Errorf("inclusion proof for %d: %w", idx, err)
			}
			fd.evidence.Entries = append(fd.evidence.Entries, EvidenceEntry{Index: idx, Leaf: string(leaf), InclusionProof: b64s(hashes)})
		}
	}
	return nil
}

func readLeaf(ctx context.Context, f Fetcher, idx, size uint64) ([]byte, error) {
	b, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, idx/256, size)
	if err != nil {
		return nil, fmt.Errorf("reading entry %d: %w", idx, err)
	}
	if int(idx%256) >= len(b.Entries) {
		return nil, fmt.Errorf("reading entry %d: bundle too short", idx)
	}
	return b.Entries[idx%256], nil
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
