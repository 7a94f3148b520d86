package receipts

import (
	"crypto/ed25519"
	"crypto/sha512"
	"errors"
	"sync"
	"sync/atomic"

	"filippo.io/edwards25519"
)

// coldSignatures is how many signatures a process makes with signEd25519
// before it switches to crypto/ed25519, whose tables (about 1 ms to build)
// then pay for themselves.
const coldSignatures = 16

var signatures atomic.Int64

// sign returns the Ed25519 signature of msg. Both paths give the same bytes.
func sign(priv ed25519.PrivateKey, msg []byte) []byte {
	if signatures.Add(1) <= coldSignatures {
		return signEd25519(priv, msg)
	}
	return ed25519.Sign(priv, msg)
}

// signEd25519 computes the RFC 8032 Ed25519 signature of msg, byte for byte
// what crypto/ed25519.Sign returns, but with R = r·B computed by
// variable-base, constant-time multiplication instead of crypto/ed25519's
// fixed-base tables. Building those tables takes about a millisecond the
// first time a process signs, which is most of a short-lived hook process's
// signing cost; a warm process signs faster with crypto/ed25519.
func signEd25519(priv ed25519.PrivateKey, msg []byte) []byte {
	h := sha512.Sum512(priv.Seed())
	s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		panic(err) // 32 bytes always clamp
	}
	mh := sha512.New()
	mh.Write(h[32:])
	mh.Write(msg)
	r, _ := edwards25519.NewScalar().SetUniformBytes(mh.Sum(nil))
	R := new(edwards25519.Point).ScalarMult(r, edwards25519.NewGeneratorPoint()).Bytes()

	kh := sha512.New()
	kh.Write(R)
	kh.Write(priv[32:])
	kh.Write(msg)
	k, _ := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	S := edwards25519.NewScalar().MultiplyAdd(k, s, r)
	return append(R, S.Bytes()...)
}

// privateKeyFromSeed returns the private key of seed given its claimed
// public key, checking the claim by variable-base multiplication (see
// signEd25519) rather than crypto/ed25519.NewKeyFromSeed's fixed-base tables.
func privateKeyFromSeed(seed []byte, pub ed25519.PublicKey) (ed25519.PrivateKey, error) {
	if len(seed) != ed25519.SeedSize || len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("bad key length")
	}
	priv := ed25519.PrivateKey(append(append(make([]byte, 0, 64), seed...), pub...))
	matchedMu.Lock()
	known := string(priv) == matched
	matchedMu.Unlock()
	if known {
		return priv, nil
	}
	h := sha512.Sum512(seed)
	s, _ := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	A := new(edwards25519.Point).ScalarMult(s, edwards25519.NewGeneratorPoint()).Bytes()
	if string(A) != string(pub) {
		return nil, errors.New("public key does not match the seed")
	}
	matchedMu.Lock()
	matched = string(priv)
	matchedMu.Unlock()
	return priv, nil
}

// matched is the last seed and public key (a private key's 64 bytes) that
// privateKeyFromSeed found to match: a process that loads the same key
// file for every call (the gate daemon, docket hookd) checks it once.
var (
	matchedMu sync.Mutex // guards matched
	matched   string
)
