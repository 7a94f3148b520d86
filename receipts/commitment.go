package receipts

import (
	"crypto/sha256"
	"encoding/hex"
)

// SaltSize is the size of the per-call salt of a tool_input_commitment.
const SaltSize = 32

// InputCommitment returns the tool_input_commitment of an input (DESIGN
// §3.1): "sha256:" + hex SHA-256 of the salt followed by JCS(tool_input).
// Unlike tool_input_hash, a reader of the log cannot confirm a guess of a
// short input without the salt, which only the issuer's journal keeps and
// a disclosure of that one call reveals.
func InputCommitment(salt, jcsInput []byte) string {
	h := sha256.New()
	h.Write(salt)
	h.Write(jcsInput)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// InputHash returns the tool_input_hash of an input: "sha256:" + hex
// SHA-256 of JCS(tool_input).
func InputHash(jcsInput []byte) string {
	sum := sha256.Sum256(jcsInput)
	return "sha256:" + hex.EncodeToString(sum[:])
}
