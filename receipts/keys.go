package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// A Key is a trusted Ed25519 verification key, supplied out of band.
type Key struct {
	// ID is the key's identifier as published (a JWKS kid), or "".
	ID string
	// Public is the 32-byte public key.
	Public ed25519.PublicKey
	// ValidFrom and ValidUntil bound the issued_at of receipts the key may
	// sign; zero means unbounded.
	ValidFrom, ValidUntil time.Time
}

// A KeySet is the set of keys a verifier trusts. The zero KeySet trusts
// nothing, so every signature check with it is undecidable. A KeySet must not
// be changed once it is in use; it is then safe for concurrent use.
type KeySet struct {
	Keys []Key

	namesOnce sync.Once
	names     map[string]int    // every identifier of every key → its index in Keys
	kids      map[string]string // public key bytes → its draft-04 kid
}

// lookup returns the key a receipt names by its published kid, its
// draft-04 sb:issuer kid or its RFC 7638 thumbprint. With no match, a set of
// exactly one key without a published kid is used (a pinned key).
func (s *KeySet) lookup(kid string) (Key, bool) {
	if s == nil {
		return Key{}, false
	}
	s.namesOnce.Do(func() {
		s.names = make(map[string]int, 3*len(s.Keys))
		s.kids = make(map[string]string, len(s.Keys))
		for i := len(s.Keys) - 1; i >= 0; i-- { // the first key wins a collision
			k := s.Keys[i]
			s.kids[string(k.Public)] = KID(k.Public)
			for _, id := range []string{Thumbprint(k.Public), KID(k.Public), k.ID} {
				if id != "" {
					s.names[id] = i
				}
			}
		}
	})
	if i, ok := s.names[kid]; ok && kid != "" {
		return s.Keys[i], true
	}
	if len(s.Keys) == 1 && (kid == "" || s.Keys[0].ID == "") {
		return s.Keys[0], true
	}
	return Key{}, false
}

// Lookup returns the key a verifier of a receipt with this kid checks its
// signature with (as Verify does): by published kid, draft-04 kid or RFC
// 7638 thumbprint, or a pinned key.
func (s *KeySet) Lookup(kid string) (Key, bool) { return s.lookup(kid) }

// Has reports whether the set holds the key whose draft-04 kid
// (sb:issuer:…) is kid.
func (s *KeySet) Has(kid string) bool {
	k, ok := s.lookup(kid)
	return ok && KID(k.Public) == kid
}

// kid returns the draft-04 kid of a key lookup returned.
func (s *KeySet) kid(k Key) string {
	if id, ok := s.kids[string(k.Public)]; ok {
		return id
	}
	return KID(k.Public)
}

// ParsePublicKeyHex parses a 64-character hex Ed25519 public key.
func ParsePublicKeyHex(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key %q: want %d hex characters", truncate(s, 20), 2*ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// PinnedKey returns a KeySet holding one pinned key.
func PinnedKey(pub ed25519.PublicKey) *KeySet {
	return &KeySet{Keys: []Key{{Public: pub}}}
}

type jwk struct {
	Kty        string `json:"kty"`
	Crv        string `json:"crv"`
	Kid        string `json:"kid"`
	X          string `json:"x"`
	ValidFrom  string `json:"valid_from"`
	ValidUntil string `json:"valid_until"`
}

// ParseJWKS parses a JWKS document of Ed25519 keys
// ({"keys":[{"kty":"OKP","crv":"Ed25519","kid","x","valid_from"?,"valid_until"?}]}).
// Keys of other types are refused rather than skipped.
func ParseJWKS(data []byte) (*KeySet, error) {
	if _, err := Parse(data); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if len(doc.Keys) == 0 {
		return nil, errors.New("jwks: no keys")
	}
	set := &KeySet{}
	for i, j := range doc.Keys {
		if j.Kty != "OKP" || j.Crv != "Ed25519" {
			return nil, fmt.Errorf("jwks: key %d: kty %q crv %q, want OKP Ed25519", i, j.Kty, j.Crv)
		}
		x, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(j.X, "="))
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("jwks: key %d: x is not a base64url Ed25519 public key", i)
		}
		k := Key{ID: j.Kid, Public: x}
		for _, w := range []struct {
			s string
			t *time.Time
		}{{j.ValidFrom, &k.ValidFrom}, {j.ValidUntil, &k.ValidUntil}} {
			if w.s == "" {
				continue
			}
			if *w.t, err = time.Parse(time.RFC3339, w.s); err != nil {
				return nil, fmt.Errorf("jwks: key %d: %w", i, err)
			}
		}
		set.Keys = append(set.Keys, k)
	}
	return set, nil
}

// JWK returns the JWKS entry for pub, as ParseJWKS reads it.
func JWK(pub ed25519.PublicKey) map[string]any {
	return map[string]any{
		"kty": "OKP", "crv": "Ed25519", "kid": KID(pub),
		"x": base64.RawURLEncoding.EncodeToString(pub), "alg": "EdDSA", "use": "sig",
	}
}

// KeyFile is the on-disk form of an issuer key, the shape other
// implementations of the draft use.
type KeyFile struct {
	PrivateKey string `json:"privateKey"` // 64 hex characters: the Ed25519 seed
	PublicKey  string `json:"publicKey"`  // 64 hex characters
	KID        string `json:"kid"`
}

// GenerateKey returns a new issuer key in key-file form.
func GenerateKey() (ed25519.PrivateKey, KeyFile) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand never fails
	}
	return priv, NewKeyFile(priv)
}

// NewKeyFile returns the key-file form of priv.
func NewKeyFile(priv ed25519.PrivateKey) KeyFile {
	pub := priv.Public().(ed25519.PublicKey)
	return KeyFile{PrivateKey: hex.EncodeToString(priv.Seed()), PublicKey: hex.EncodeToString(pub), KID: KID(pub)}
}

// WriteKeyFile writes kf to path with mode 0600, refusing to overwrite.
func WriteKeyFile(path string, kf KeyFile) error {
	j, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(j, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ErrKeyPermissions is returned for private key files that group or others can read.
var ErrKeyPermissions = errors.New("private key file is readable by group or others (chmod 600)")

// CheckKeyFileMode refuses private key files that group or others can access.
func CheckKeyFileMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: %w", path, ErrKeyPermissions)
	}
	return nil
}

// LoadPrivateKey reads an issuer key file, refusing one that group or others
// can read, and checks that its public key and kid match the seed.
func LoadPrivateKey(path string) (ed25519.PrivateKey, error) {
	if err := CheckKeyFileMode(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kf KeyFile
	if err := json.Unmarshal(data, &kf); err != nil {
		return nil, fmt.Errorf("%s: not a key file: %w", path, err)
	}
	seed, err := hex.DecodeString(kf.PrivateKey)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: privateKey is not a 64-character hex seed", path)
	}
	if kf.PublicKey == "" {
		return ed25519.NewKeyFromSeed(seed), nil
	}
	// The file names its public key: check it against the seed without
	// crypto/ed25519's fixed-base tables, which would cost a hook process
	// about a millisecond to build.
	pub, err := ParsePublicKeyHex(kf.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, err := privateKeyFromSeed(seed, pub)
	if err != nil || kf.KID != "" && kf.KID != KID(pub) {
		return nil, fmt.Errorf("%s: publicKey or kid does not match the private key", path)
	}
	return priv, nil
}

// LoadKeySet reads trusted keys from a file: a JWKS document, a key file
// (only its public key is used), or a bare 64-character hex public key.
func LoadKeySet(path string) (*KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	if pub, err := ParsePublicKeyHex(string(data)); err == nil {
		return PinnedKey(pub), nil
	}
	m, err := ParseObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, ok := m["keys"]; ok {
		set, err := ParseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return set, nil
	}
	if s, ok := m["publicKey"].(string); ok {
		pub, err := ParsePublicKeyHex(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return PinnedKey(pub), nil
	}
	return nil, fmt.Errorf("%s: not a JWKS, key file or hex public key", path)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
