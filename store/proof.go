package store

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"

	f_log "github.com/transparency-dev/formats/log"
	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/formats/witness"
	mproof "github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

// Errors of proof verification. ErrProofMalformed and ErrBadPolicy mean the
// check could not run (undecidable); the others mean it ran and failed
// (invalid, DESIGN §3.3).
var (
	ErrProofMalformed = errors.New("malformed log proof")
	ErrBadPolicy      = errors.New("unusable witness policy")
	ErrCheckpointSig  = errors.New("checkpoint is not signed by the log key")
	ErrInclusion      = errors.New("inclusion proof does not verify")
	ErrWitnessQuorum  = errors.New("checkpoint is not cosigned by the witness quorum")
	ErrReceiptInvalid = errors.New("receipt does not verify under the issuer key")
)

// A ProofVerifier checks c2sp.org/tlog-proof@v1 proofs offline against a
// pinned log key and, optionally, a C2SP tlog-policy witness quorum. It is
// safe for concurrent use.
type ProofVerifier struct {
	logKey note.Verifier
	policy *witness.Group
}

// NewProofVerifier returns a verifier for proofs from the log with verifier
// key logVKey. A non-empty policy is a C2SP tlog-policy file whose quorum
// every checkpoint must satisfy; its witness URLs may be omitted, and if it
// lists logs, logVKey must be one of them.
func NewProofVerifier(logVKey string, policy []byte) (*ProofVerifier, error) {
	v, err := note.NewVerifier(logVKey)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	pv := &ProofVerifier{logKey: v}
	if len(bytes.TrimSpace(policy)) == 0 {
		return pv, nil
	}
	norm, logs, err := normalizePolicy(policy)
	if err != nil {
		return nil, err
	}
	if len(logs) > 0 && !containsKey(logs, logVKey) {
		return nil, fmt.Errorf("%w: the policy does not list the log key %s", ErrBadPolicy, logVKey)
	}
	g, err := witness.ParsePolicy(norm)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	if g.N <= 0 && len(g.Components) == 0 {
		return nil, fmt.Errorf("%w: no quorum", ErrBadPolicy)
	}
	pv.policy = &g
	return pv, nil
}

// normalizePolicy adds a placeholder URL to witness lines without one (the
// URL matters to logs, not to verifiers) and returns the log keys listed.
func normalizePolicy(policy []byte) ([]byte, []string, error) {
	var out bytes.Buffer
	var logs []string
	hasQuorum := false
	for line := range strings.Lines(string(policy)) {
		body, _, _ := strings.Cut(line, "#")
		f := strings.Fields(body)
		switch {
		case len(f) == 0:
		case f[0] == "log" && len(f) >= 2:
			logs = append(logs, f[1])
		case f[0] == "witness" && len(f) == 3:
			if _, err := f_note.NewVerifierForCosignatureV1(f[2]); err != nil {
				return nil, nil, fmt.Errorf("%w: witness %s: %w", ErrBadPolicy, f[1], err)
			}
			line = fmt.Sprintf("witness %s %s https://witness.invalid/\n", f[1], f[2])
		case f[0] == "quorum":
			hasQuorum = true
		}
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			out.WriteByte('\n')
		}
	}
	if !hasQuorum {
		return nil, nil, fmt.Errorf("%w: no quorum line", ErrBadPolicy)
	}
	return out.Bytes(), logs, nil
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// A VerifiedProof is what a proof establishes: the entry is at Index in the
// log whose checkpoint (Size, Root) is Checkpoint, signed by the log and,
// with a policy, cosigned by the witness quorum.
type VerifiedProof struct {
	Index      uint64
	Size       uint64
	Root       []byte
	Checkpoint []byte
}

// VerifyReceipt checks the proof of a receipt signed by pub: the receipt's
// signature and kid, the checkpoint signature, the witness quorum, and the
// inclusion of exactly the log entry {"public_key","receipt"} (DESIGN §3.4).
func (v *ProofVerifier) VerifyReceipt(pub ed25519.PublicKey, receipt, proofText []byte) (*VerifiedProof, error) {
	leaf, err := receipts.NewEntry(pub, receipt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReceiptInvalid, err)
	}
	return v.Verify(leaf, proofText)
}

// Verify checks that proofText proves the inclusion of the log entry leaf
// (its exact bytes, RFC 6962 leaf hash) under a checkpoint signed by the log
// key and, with a policy, cosigned by the witness quorum.
func (v *ProofVerifier) Verify(leaf, proofText []byte) (*VerifiedProof, error) {
	var tp proof.TLogProof
	if err := tp.Unmarshal(proofText); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProofMalformed, err)
	}
	if len(tp.Checkpoint) == 0 {
		return nil, fmt.Errorf("%w: no checkpoint", ErrProofMalformed)
	}
	cp, _, _, err := f_log.ParseCheckpoint(tp.Checkpoint, v.logKey.Name(), v.logKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpointSig, err)
	}
	if v.policy != nil && !v.policy.Satisfied(tp.Checkpoint) {
		return nil, fmt.Errorf("%w: checkpoint of size %d", ErrWitnessQuorum, cp.Size)
	}
	if tp.Index >= cp.Size {
		return nil, fmt.Errorf("%w: index %d is not below checkpoint size %d", ErrInclusion, tp.Index, cp.Size)
	}
	hashes := make([][]byte, len(tp.Hashes))
	for i := range tp.Hashes {
		hashes[i] = tp.Hashes[i][:]
	}
	lh := rfc6962.DefaultHasher.HashLeaf(leaf)
	if err := mproof.VerifyInclusion(rfc6962.DefaultHasher, tp.Index, cp.Size, lh, hashes, cp.Hash); err != nil {
		return nil, fmt.Errorf("%w: leaf %x at %d in tree %d: %w", ErrInclusion, lh, tp.Index, cp.Size, err)
	}
	return &VerifiedProof{Index: tp.Index, Size: cp.Size, Root: cp.Hash, Checkpoint: tp.Checkpoint}, nil
}
