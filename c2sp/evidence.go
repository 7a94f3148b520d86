package c2sp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	mproof "github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// An InclusionError reports a checkpoint, signed by the log, under which an
// inclusion proof does not verify. It carries everything needed to check the
// claim again. It wraps ErrInclusion.
type InclusionError struct {
	// Checkpoint is the signed checkpoint note, verbatim.
	Checkpoint []byte
	// Leaf is the log entry (not its hash).
	Leaf []byte
	// Index is the entry's claimed index.
	Index uint64
	// Proof is the inclusion proof, leaf to root.
	Proof [][]byte
	// Err says which check failed.
	Err error
}

func (e *InclusionError) Error() string {
	return fmt.Sprintf("%v: %v", ErrInclusion, e.Err)
}

// Unwrap returns ErrInclusion and the cause.
func (e *InclusionError) Unwrap() []error { return []error{ErrInclusion, e.Err} }

// Report returns the evidence as text: the checkpoint, the leaf hash and
// index, and the proof hashes in base64.
func (e *InclusionError) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n\nsigned checkpoint:\n%s\nleaf %d (leaf hash %x):\n%s\n\ninclusion proof:\n",
		e, indent(e.Checkpoint), e.Index, rfc6962.DefaultHasher.HashLeaf(e.Leaf), indent(e.Leaf))
	writeHashes(&b, e.Proof)
	return b.String()
}

// An InconsistencyError reports two checkpoints, both signed by one log,
// that are not consistent: the same size with two roots (Fork), or a
// consistency proof between them that does not verify. In the second case
// the evidence is as strong as the proof's source: a proof served by the log
// itself shows the log misbehaving. Its message is a complete report in the
// style of the Go checksum database client.
type InconsistencyError struct {
	// Old and New are the signed checkpoint notes, verbatim; Old is the
	// smaller tree.
	Old, New []byte
	// OldSize and NewSize are their tree sizes.
	OldSize, NewSize uint64
	// Proof is the consistency proof from Old to New (empty for a fork).
	Proof [][]byte
	// Fork is set when both checkpoints have the same size and different
	// roots: evidence that needs no proof.
	Fork bool
	// Err is why the proof failed.
	Err error
}

func (e *InconsistencyError) Error() string {
	var b strings.Builder
	b.WriteString("SECURITY ERROR\n")
	if e.Fork {
		fmt.Fprintf(&b, "log misbehavior detected: two checkpoints of size %d with different roots\n", e.OldSize)
	} else {
		fmt.Fprintf(&b, "log misbehavior detected: no consistency from size %d to size %d: %v\n", e.OldSize, e.NewSize, e.Err)
	}
	fmt.Fprintf(&b, "\nold checkpoint:\n%s\nnew checkpoint:\n%s\nproof of misbehavior:\n", indent(e.Old), indent(e.New))
	writeHashes(&b, e.Proof)
	return b.String()
}

func indent(text []byte) string {
	var b strings.Builder
	for line := range strings.Lines(string(bytes.TrimRight(text, "\n"))) {
		b.WriteString("\t" + line)
	}
	b.WriteString("\n")
	return b.String()
}

func writeHashes(b *strings.Builder, hashes [][]byte) {
	if len(hashes) == 0 {
		b.WriteString("\t(empty)\n")
	}
	for _, h := range hashes {
		fmt.Fprintf(b, "\t%s\n", base64.StdEncoding.EncodeToString(h))
	}
}

// CheckConsistency checks that two checkpoints of one log, old and new
// (signed notes, in either order), are consistent: both must be signed by
// the log key v (else the error wraps ErrCheckpointSig, and proves nothing),
// and proof must be an RFC 6962 consistency proof from the smaller tree to
// the larger one. Same size with different roots, a size-0 checkpoint whose
// root is not EmptyRoot, or a proof that does not verify is an
// *InconsistencyError holding both checkpoints and the proof.
func CheckConsistency(v note.Verifier, old, new []byte, proof [][]byte) error {
	oc, err := OpenCheckpoint(v, old)
	if err != nil {
		return fmt.Errorf("old checkpoint: %w", err)
	}
	nc, err := OpenCheckpoint(v, new)
	if err != nil {
		return fmt.Errorf("new checkpoint: %w", err)
	}
	if oc.Size > nc.Size {
		oc, nc, old, new = nc, oc, new, old
	}
	e := &InconsistencyError{Old: old, New: new, OldSize: oc.Size, NewSize: nc.Size, Proof: proof}
	switch {
	case oc.Size == nc.Size && !bytes.Equal(oc.Root, nc.Root):
		e.Fork, e.Proof = true, nil
		return e
	case oc.Size == 0 && !bytes.Equal(oc.Root, EmptyRoot):
		e.Err = fmt.Errorf("size-0 checkpoint with a root other than the empty tree's")
		return e
	}
	if err := mproof.VerifyConsistency(rfc6962.DefaultHasher, oc.Size, nc.Size, proof, oc.Root, nc.Root); err != nil {
		e.Err = err
		return e
	}
	return nil
}

// CheckConsistency is the package's CheckConsistency with the pinned log key.
func (v *ProofVerifier) CheckConsistency(old, new []byte, proof [][]byte) error {
	return CheckConsistency(v.logKey, old, new, proof)
}
