package log

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/docketlog/docket/receipts"
	"golang.org/x/mod/sumdb/note"
)

// LoadSigner reads a signed-note signer key (the skey text that
// note.GenerateKey and "docket keygen -log" write) and returns the signer
// and its verifier key. Key files that group or others can read are refused.
func LoadSigner(path string) (note.Signer, string, error) {
	if err := receipts.CheckKeyFileMode(path); err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	skey := strings.TrimSpace(string(data))
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("%s: not a note signer key: %w", path, err)
	}
	vkey, err := VerifierKey(skey)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return s, vkey, nil
}

// VerifierKey returns the verifier key (name+hash+base64) of an Ed25519
// signed-note signer key.
func VerifierKey(skey string) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", errors.New("malformed signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("signer key is not an Ed25519 key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(parts[2], pub)
	if err != nil {
		return "", err
	}
	if _, err := note.NewVerifier(vkey); err != nil {
		return "", err
	}
	return vkey, nil
}

// GenerateKeyFile makes a new signer key named origin, writes it to path
// with mode 0600 (refusing to overwrite) and its verifier key to path+".pub",
// and returns the verifier key.
func GenerateKeyFile(path, origin string) (string, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return "", fmt.Errorf("generating log key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(skey + "\n"); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.WriteFile(path+".pub", []byte(vkey+"\n"), 0o644); err != nil {
		return "", err
	}
	return vkey, nil
}
