package receipts

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"sync/atomic"
)

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b with the Bitcoin alphabet. It converts base 256 to
// base 58 digit by digit in a fixed buffer (Bitcoin's EncodeBase58), not
// through math/big: a log reader computes the kid of every entry.
func base58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// Each byte takes log(256)/log(58) < 1.37 digits.
	size := (len(b)-zeros)*137/100 + 1
	digits := make([]byte, size)
	high := size - 1 // digits[:high+1] are all zero
	for _, c := range b[zeros:] {
		carry := int(c)
		j := size - 1
		for ; j >= 0 && (j > high || carry != 0); j-- {
			carry += 256 * int(digits[j])
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		high = j
	}
	skip := 0
	for skip < size && digits[skip] == 0 {
		skip++
	}
	out := make([]byte, zeros, zeros+size-skip)
	for i := range out {
		out[i] = '1'
	}
	for _, d := range digits[skip:] {
		out = append(out, base58Alphabet[d])
	}
	return string(out)
}

// KIDPrefix starts every key identifier Docket issues.
const KIDPrefix = "sb:issuer:"

// KID returns the draft-04 key identifier of an Ed25519 public key:
// "sb:issuer:" followed by the first 12 characters of its Base58 encoding.
func KID(pub ed25519.PublicKey) string {
	if len(pub) == ed25519.PublicKeySize {
		if kid, ok := kidCache.Load([32]byte(pub)); ok {
			return kid.(string)
		}
	}
	s := base58(pub)
	if len(s) > 12 {
		s = s[:12]
	}
	kid := KIDPrefix + s
	if len(pub) == ed25519.PublicKeySize && kidCached.Add(1) <= maxKIDs {
		kidCache.Store([32]byte(pub), kid)
	}
	return kid
}

// kidCache holds the kids of the first maxKIDs keys KID was asked for: a
// log reader asks for the kid of every entry, and entries repeat their
// issuers' keys.
var (
	kidCache  sync.Map // [32]byte → string
	kidCached atomic.Int64
)

const maxKIDs = 4096

// Thumbprint returns the RFC 7638 JWK thumbprint of an Ed25519 public key,
// the key identifier used by the v2 artifact shape.
func Thumbprint(pub ed25519.PublicKey) string {
	x := base64.RawURLEncoding.EncodeToString(pub)
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// DIDKey returns the did:key identifier of an Ed25519 public key: "did:key:z"
// followed by the Base58 of the multicodec ed25519-pub prefix 0xed 0x01 and
// the key (W3C did:key, multibase base58btc).
func DIDKey(pub ed25519.PublicKey) string {
	return "did:key:z" + base58(append([]byte{0xed, 0x01}, pub...))
}
