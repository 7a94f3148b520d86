package c2sp

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/transparency-dev/formats/proof"
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
	policy *Policy // nil: no quorum required
}

// NewProofVerifier returns a verifier for proofs from the log with verifier
// key logVKey. A non-empty policy is a C2SP tlog-policy file (see
// ParsePolicy) whose quorum every checkpoint must satisfy; its witness URLs
// may be omitted, and if it lists logs, logVKey must be one of them. Errors
// about the policy wrap ErrBadPolicy.
func NewProofVerifier(logVKey string, policy []byte) (*ProofVerifier, error) {
	v, err := note.NewVerifier(logVKey)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	if len(policy) == 0 {
		return &ProofVerifier{logKey: v}, nil
	}
	p, err := ParsePolicy(policy)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadPolicy, err)
	}
	return NewPolicyVerifier(logVKey, p)
}

// maxPolicyFile bounds the witness policy files LoadProofVerifier reads.
const maxPolicyFile = 1 << 20

// LoadProofVerifier is NewProofVerifier with the policy read from the file
// policyFile, or no policy when policyFile is "". Every client of the log
// (sync, the strict mode, verify, audit, monitor, explore) sets its
// verifier up with it, so that a policy file means the same everywhere.
func LoadProofVerifier(logVKey, policyFile string) (*ProofVerifier, error) {
	if policyFile == "" {
		return NewProofVerifier(logVKey, nil)
	}
	f, err := os.Open(policyFile)
	if err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	defer f.Close()
	policy, err := io.ReadAll(io.LimitReader(f, maxPolicyFile+1))
	if err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	if len(policy) > maxPolicyFile {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadPolicy, policyFile, maxPolicyFile)
	}
	if len(policy) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrBadPolicy, policyFile)
	}
	return NewProofVerifier(logVKey, policy)
}

// NewPolicyVerifier is NewProofVerifier with a parsed policy; p may be nil.
func NewPolicyVerifier(logVKey string, p *Policy) (*ProofVerifier, error) {
	v, err := note.NewVerifier(logVKey)
	if err != nil {
		return nil, fmt.Errorf("log key: %w", err)
	}
	if p != nil && !p.HasLog(logVKey) {
		return nil, fmt.Errorf("%w: the policy does not list the log key %s", ErrBadPolicy, logVKey)
	}
	return &ProofVerifier{logKey: v, policy: p}, nil
}

// LogKey returns the verifier of the pinned log key.
func (v *ProofVerifier) LogKey() note.Verifier { return v.logKey }

// Policy returns the witness policy checkpoints must satisfy, or nil.
func (v *ProofVerifier) Policy() *Policy { return v.policy }

// Witnessed reports whether checkpoints must satisfy a witness quorum: a
// policy was given and its quorum is not "none".
func (v *ProofVerifier) Witnessed() bool { return v.policy != nil && !v.policy.Unwitnessed() }

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

// VerifyCheckpoint checks that signedCheckpoint is signed by the log key
// and, with a policy, cosigned by the witness quorum.
func (v *ProofVerifier) VerifyCheckpoint(signedCheckpoint []byte) (*Checkpoint, error) {
	cp, err := OpenCheckpoint(v.logKey, signedCheckpoint)
	if err != nil {
		return nil, err
	}
	if v.policy != nil && !v.policy.Satisfied(signedCheckpoint) {
		return nil, fmt.Errorf("%w: checkpoint of size %d", ErrWitnessQuorum, cp.Size)
	}
	return cp, nil
}

// Verify checks that proofText proves the inclusion of the log entry leaf
// (its exact bytes, RFC 6962 leaf hash) under a checkpoint signed by the log
// key and, with a policy, cosigned by the witness quorum. A proof that does
// not verify is an *InclusionError, which wraps ErrInclusion.
func (v *ProofVerifier) Verify(leaf, proofText []byte) (*VerifiedProof, error) {
	var tp proof.TLogProof
	if err := tp.Unmarshal(proofText); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProofMalformed, err)
	}
	if len(tp.Checkpoint) == 0 {
		return nil, fmt.Errorf("%w: no checkpoint", ErrProofMalformed)
	}
	cp, err := v.VerifyCheckpoint(tp.Checkpoint)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(tp.Hashes))
	for i := range tp.Hashes {
		hashes[i] = tp.Hashes[i][:]
	}
	if err := VerifyInclusion(tp.Checkpoint, cp, leaf, tp.Index, hashes); err != nil {
		return nil, err
	}
	return &VerifiedProof{Index: tp.Index, Size: cp.Size, Root: cp.Root, Checkpoint: tp.Checkpoint}, nil
}

// VerifyInclusion checks the RFC 6962 inclusion proof of leaf at index in
// the tree of cp, the checkpoint of the verified signed note
// signedCheckpoint. A failure is an *InclusionError carrying that evidence.
func VerifyInclusion(signedCheckpoint []byte, cp *Checkpoint, leaf []byte, index uint64, hashes [][]byte) error {
	var err error
	if index >= cp.Size {
		err = fmt.Errorf("index %d is not below checkpoint size %d", index, cp.Size)
	} else {
		lh := rfc6962.DefaultHasher.HashLeaf(leaf)
		if err = mproof.VerifyInclusion(rfc6962.DefaultHasher, index, cp.Size, lh, hashes, cp.Root); err != nil {
			err = fmt.Errorf("leaf %x at %d in tree %d: %w", lh, index, cp.Size, err)
		}
	}
	if err != nil {
		return &InclusionError{Checkpoint: signedCheckpoint, Leaf: leaf, Index: index, Proof: hashes, Err: err}
	}
	return nil
}

// Causes CheckReceipt and its callers give a receipts.Result (DESIGN §3.3).
const (
	CauseNoProof   = "no_proof"        // undecidable: the receipt may not be in the log
	CauseBadProof  = "malformed_proof" // undecidable: the proof cannot be read as a tlog-proof
	CauseInclusion = "inclusion"       // invalid: the proof does not show the receipt in the log
)

// CheckReceipt requires that proofText proves the receipt whose signature
// verified as r (r.Key is the issuer key) and returns its index in the log.
// A proof that cannot be read makes r undecidable (CauseBadProof); one that
// fails makes it invalid (CauseInclusion); either returns -1. Results that
// are not valid are left alone.
func (v *ProofVerifier) CheckReceipt(r *receipts.Result, receipt, proofText []byte) int64 {
	if r.Outcome != receipts.Valid {
		return -1
	}
	vp, err := v.VerifyReceipt(r.Key, receipt, proofText)
	switch {
	case errors.Is(err, ErrProofMalformed):
		r.Outcome, r.Cause, r.Detail = receipts.Undecidable, CauseBadProof, err.Error()
		return -1
	case err != nil:
		r.Outcome, r.Cause, r.Detail = receipts.Invalid, CauseInclusion, err.Error()
		return -1
	}
	return int64(vp.Index)
}
