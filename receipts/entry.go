package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
)

// MaxEntrySize is the largest log entry, the tlog-tiles limit on a leaf.
const MaxEntrySize = 65535

// Errors returned by ParseEntry, so that a log can answer with the right
// status: ErrMalformedEntry (400), ErrEntryTooLarge (413), ErrEntrySignature (422).
var (
	ErrMalformedEntry = errors.New("malformed entry")
	ErrEntryTooLarge  = errors.New("entry too large")
	ErrEntrySignature = errors.New("entry signature or kid does not verify")
)

// An Entry is a log entry: a receipt with the public key that signed it
// (DESIGN §3.4). Entries are self-verifying; whether the key belongs to whom
// it claims is still for the verifier's pinned keys to decide.
type Entry struct {
	PublicKey ed25519.PublicKey
	// Receipt is the receipt in JCS form.
	Receipt []byte
	// Hash is the SHA-256 of Receipt: the receipt's chain hash is
	// "sha256:" and its lowercase hex.
	Hash [32]byte
	// KID, SessionID and Sequence are read from the receipt.
	KID       string
	SessionID string
	Sequence  int64
	// Payload is the receipt's payload as parsed: strings, bool, nil,
	// json.Number, []any and map[string]any. It must not be modified.
	Payload map[string]any
}

// Leaf returns the log leaf: the JCS of {"public_key": <hex>, "receipt": <receipt>}.
func (e *Entry) Leaf() []byte {
	b := make([]byte, 0, e.leafSize())
	b = append(b, leafStart...)
	b = hex.AppendEncode(b, e.PublicKey)
	b = append(b, leafMiddle...)
	b = append(b, e.Receipt...)
	return append(b, '}')
}

// The parts of a leaf around its public key and its receipt.
const (
	leafStart  = `{"public_key":"`
	leafMiddle = `","receipt":`
)

// leafSize returns len(e.Leaf()).
func (e *Entry) leafSize() int {
	return len(leafStart) + hex.EncodedLen(len(e.PublicKey)) + len(leafMiddle) + len(e.Receipt) + 1
}

// NewEntry returns the log leaf for a receipt signed by pub, verifying it first.
func NewEntry(pub ed25519.PublicKey, receipt []byte) ([]byte, error) {
	c, err := CanonicalizeJSON(receipt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedEntry, err)
	}
	e := &Entry{PublicKey: pub, Receipt: c}
	leaf := e.Leaf()
	if _, err := ParseEntry(leaf); err != nil {
		return nil, err
	}
	return leaf, nil
}

// ParseEntry strictly parses and verifies a log entry from untrusted input:
// size, strict JSON, exactly the members public_key and receipt, a draft-04
// envelope of exactly payload and signature, a signature of exactly alg, kid
// and sig (128 lowercase hex characters), a kid that is the public key's, and a valid signature. The
// returned entry's Leaf is the canonical form to store, so that the same
// entry always has the same leaf hash.
func ParseEntry(data []byte) (*Entry, error) { return ParseEntryKnown(data, nil) }

// ParseEntryKnown is ParseEntry for a reader that has verified some
// receipts already: when known(receipt, pub) reports that the receipt's
// exact canonical bytes were verified under pub, the Ed25519 signature is
// not checked a second time (every other check still is). An auditor that
// verified a presented chain reads its logged copy this way, so that each
// receipt costs one verification. A nil known is ParseEntry.
func ParseEntryKnown(data []byte, known func(receipt []byte, pub ed25519.PublicKey) bool) (*Entry, error) {
	if len(data) > MaxEntrySize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrEntryTooLarge, len(data), MaxEntrySize)
	}
	obj, canonical, members, asciiKeys, err := parseSpansKeys(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedEntry, err)
	}
	if !asciiKeys {
		return nil, fmt.Errorf("%w: non-ASCII object key: receipts allow only ASCII keys", ErrMalformedEntry)
	}
	pk, _ := obj["public_key"].(string)
	rec, ok := obj["receipt"].(map[string]any)
	if len(obj) != 2 || !ok || pk == "" {
		return nil, fmt.Errorf("%w: want exactly the members public_key (hex) and receipt (object)", ErrMalformedEntry)
	}
	pub, err := ParsePublicKeyHex(pk)
	if err != nil || !isHex(pk) {
		return nil, fmt.Errorf("%w: public_key is not 64 lowercase hex characters", ErrMalformedEntry)
	}
	// The receipt is parsed once: in an entry already in JCS form its
	// canonical bytes are (a copy of) a slice of the input.
	var c, payload []byte
	if canonical {
		span := members["receipt"]
		c = bytes.Clone(data[span[0]:span[1]])
		if ps, ok := members["receipt\x00payload"]; ok {
			payload = c[ps[0]-span[0] : ps[1]-span[0] : ps[1]-span[0]]
		}
	} else if c, err = Canonicalize(rec); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedEntry, err)
	}
	rc, cause, detail := receiptOf(rec, c, payload)
	if p, ok := rec["payload"].(map[string]any); ok && rc.unsigned == "" && (cause != "" || rc.shape != "envelope") {
		if sig, ok := rec["signature"].(map[string]any); ok && p != nil {
			rc.unsigned = unsignedMember(rec, sig)
		}
	}
	if rc.unsigned != "" {
		return nil, fmt.Errorf("%w: receipt has %s, which the signature does not cover", ErrMalformedEntry, rc.unsigned)
	}
	if cause != "" || rc.shape != "envelope" {
		return nil, fmt.Errorf("%w: receipt is not a draft-04 envelope: %s", ErrMalformedEntry, detail)
	}
	if kid := KID(pub); rc.kid != kid {
		return nil, fmt.Errorf("%w: kid %q is not %q, the kid of public_key", ErrEntrySignature, rc.kid, kid)
	}
	if rc.sig == nil || !(known != nil && known(c, pub)) && !verifyEd25519(pub, rc.signingInput, rc.sig) {
		return nil, fmt.Errorf("%w: bad Ed25519 signature", ErrEntrySignature)
	}
	e := &Entry{PublicKey: pub, Receipt: c, Hash: rc.sum, KID: rc.kid}
	if n := e.leafSize(); n > MaxEntrySize {
		return nil, fmt.Errorf("%w: canonical leaf is %d bytes, limit %d", ErrEntryTooLarge, n, MaxEntrySize)
	}
	e.Payload = rc.payload
	e.SessionID, _ = rc.payload["session_id"].(string)
	e.Sequence, _ = number(rc.payload["sequence"])
	return e, nil
}
