package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"math/big"
	"sync/atomic"
)

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b with the Bitcoin alphabet.
func base58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	mod, radix := new(big.Int), big.NewInt(58)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for range zeros {
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// KIDPrefix starts every key identifier Docket issues.
const KIDPrefix = "sb:issuer:"

// KID returns the draft-04 key identifier of an Ed25519 public key:
// "sb:issuer:" followed by the first 12 characters of its Base58 encoding.
func KID(pub ed25519.PublicKey) string {
	s := base58(pub)
	if len(s) > 12 {
		s = s[:12]
	}
	return KIDPrefix + s
}

// kidCache holds the KIDs of recently seen keys, one per slot chosen by
// the key's first byte: a log sees the same few issuers again and again,
// and Base58 costs a division per digit. It is bounded whatever keys
// entries carry.
var kidCache [256]atomic.Pointer[kidOf]

type kidOf struct {
	pub [ed25519.PublicKeySize]byte
	kid string
}

// cachedKID returns KID(pub), from kidCache when it holds pub.
func cachedKID(pub ed25519.PublicKey) string {
	if len(pub) != ed25519.PublicKeySize {
		return KID(pub)
	}
	slot := &kidCache[pub[0]]
	if k := slot.Load(); k != nil && bytes.Equal(k.pub[:], pub) {
		return k.kid
	}
	k := &kidOf{pub: [ed25519.PublicKeySize]byte(pub), kid: KID(pub)}
	slot.Store(k)
	return k.kid
}

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
