package c2sp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	flog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// A Checkpoint is the body of a C2SP tlog-checkpoint: the log's origin, the
// tree size and the RFC 6962 root hash. Extension lines are not kept.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
}

// ParseCheckpoint parses the text of a checkpoint note (without its
// signatures). It does not check any signature.
func ParseCheckpoint(text []byte) (*Checkpoint, error) {
	var c flog.Checkpoint
	if _, err := c.Unmarshal(text); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProofMalformed, err)
	}
	return &Checkpoint{Origin: c.Origin, Size: c.Size, Root: c.Hash}, nil
}

// OpenCheckpoint verifies that the signed note signedCheckpoint is signed by
// the log key v, whose name must be the checkpoint's origin, and returns the
// checkpoint. Signatures of other keys are ignored. Errors wrap
// ErrCheckpointSig.
func OpenCheckpoint(v note.Verifier, signedCheckpoint []byte) (*Checkpoint, error) {
	c, _, _, err := flog.ParseCheckpoint(signedCheckpoint, v.Name(), v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpointSig, err)
	}
	return &Checkpoint{Origin: c.Origin, Size: c.Size, Root: c.Hash}, nil
}

// LogID returns the identifier of the log with the given origin in the
// tlog-witness monitoring API, GET <prefix>/<log ID>/checkpoint: the
// lowercase hex SHA-256 of the origin line (without its newline).
func LogID(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return hex.EncodeToString(h[:])
}

// EmptyRoot is the root hash of the empty tree: SHA-256 of the empty string
// (RFC 6962, Section 2.1).
var EmptyRoot = func() []byte { h := sha256.Sum256(nil); return h[:] }()
