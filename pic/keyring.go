package pic

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/docketlog/docket/internal/strictjson"
)

// Keyring holds the Ed25519 keys signature evidence is verified against,
// in the PIC keyring format:
//
//	{"trusted_keys": {"KEY_ID": "BASE64 or HEX", "KEY_ID2": {"public_key": "...", "expires_at": "RFC 3339"}},
//	 "revoked_keys": ["KEY_ID3"]}
//
// A Keyring is read-only after parsing and safe for concurrent use.
type Keyring struct {
	keys    map[string]keyringEntry
	revoked map[string]bool
}

type keyringEntry struct {
	pub     ed25519.PublicKey
	expires time.Time // zero: never
}

// ParseKeyring parses a PIC keyring (strictly, see strictjson.Parse).
func ParseKeyring(data []byte) (*Keyring, error) {
	m, err := strictjson.ParseObject(data)
	if err == nil {
		err = strictjson.CheckFold(m)
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	k := &Keyring{keys: map[string]keyringEntry{}, revoked: map[string]bool{}}
	trusted, ok := m["trusted_keys"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("keyring: trusted_keys is not an object")
	}
	for id, v := range trusted {
		var e keyringEntry
		var pk string
		switch v := v.(type) {
		case string:
			pk = v
		case map[string]any:
			pk, _ = v["public_key"].(string)
			if x, ok := v["expires_at"]; ok && x != nil {
				s, _ := x.(string)
				t, err := time.Parse(time.RFC3339, strings.Replace(s, "z", "Z", 1))
				if err != nil {
					if t, err = time.Parse("2006-01-02T15:04:05", s); err != nil {
						return nil, fmt.Errorf("keyring: key %q: expires_at %q is not an RFC 3339 time", id, s)
					}
				}
				e.expires = t
			}
		default:
			return nil, fmt.Errorf("keyring: key %q is neither a string nor an object", id)
		}
		pub, err := parsePublicKey(pk)
		if err != nil {
			return nil, fmt.Errorf("keyring: key %q: %v", id, err)
		}
		e.pub = pub
		k.keys[id] = e
	}
	if r, ok := m["revoked_keys"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("keyring: revoked_keys is not an array")
		}
		for _, id := range list {
			s, ok := id.(string)
			if !ok {
				return nil, fmt.Errorf("keyring: revoked_keys holds a non-string")
			}
			k.revoked[s] = true
		}
	}
	return k, nil
}

// parsePublicKey accepts a raw Ed25519 public key in hex (64 digits) or
// base64 (standard or URL alphabet, padding optional).
func parsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	var b []byte
	var err error
	if len(s) == 64 {
		b, err = hex.DecodeString(s)
	}
	if len(s) != 64 || err != nil {
		t := strings.TrimRight(strings.NewReplacer("-", "+", "_", "/").Replace(s), "=")
		b, err = base64.RawStdEncoding.DecodeString(t)
		if err != nil {
			return nil, fmt.Errorf("public key is neither hex nor base64")
		}
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key is %d bytes, want %d", len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// key returns the active key for id at now.
func (k *Keyring) key(id string, now time.Time) (ed25519.PublicKey, error) {
	id = strings.TrimSpace(id)
	if k.revoked[id] {
		return nil, fmt.Errorf("key %q is revoked", id)
	}
	e, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("unknown key %q", id)
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		return nil, fmt.Errorf("key %q expired at %s", id, e.expires.Format(time.RFC3339))
	}
	return e.pub, nil
}
