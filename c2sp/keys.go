package c2sp

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

// GenerateKey returns a new Ed25519 signed-note key pair named name: the
// signer key (PRIVATE+KEY+name+hash+base64) and the verifier key. A witness
// signs with it through NewCosigner and publishes CosignatureVKey(vkey).
func GenerateKey(name string) (skey, vkey string, err error) {
	return note.GenerateKey(rand.Reader, name)
}

// CosignatureVKey returns the cosignature/v1 verifier key (type 0x04) of an
// Ed25519 signed-note verifier key: what a tlog-policy "witness" line holds.
func CosignatureVKey(vkey string) (string, error) {
	return fnote.VKeyToCosignatureV1(vkey)
}

// seedOf returns the Ed25519 seed of a signer key of one of the given types.
func seedOf(skey string, types ...byte) (name string, seed []byte, err error) {
	// PRIVATE+KEY+name+hash+base64(type ‖ seed); the base64 may contain '+'.
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", nil, errors.New("malformed signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || !strings.ContainsRune(string(types), rune(raw[0])) {
		return "", nil, errors.New("signer key is not an Ed25519 key")
	}
	return parts[2], raw[1:], nil
}

// VerifierKey returns the verifier key (name+hash+base64) of an Ed25519
// signed-note signer key.
func VerifierKey(skey string) (string, error) {
	name, seed, err := seedOf(skey, sigEd25519)
	if err != nil {
		return "", err
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return "", err
	}
	if _, err := note.NewVerifier(vkey); err != nil {
		return "", err
	}
	return vkey, nil
}

// NewSigner returns the signed-note signer of the Ed25519 signer key skey
// (surrounding white space is ignored) and its verifier key.
func NewSigner(skey string) (note.Signer, string, error) {
	skey = strings.TrimSpace(skey)
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, "", fmt.Errorf("not a note signer key: %w", err)
	}
	vkey, err := VerifierKey(skey)
	if err != nil {
		return nil, "", err
	}
	return s, vkey, nil
}

// LoadSigner reads a signed-note signer key (the skey text that
// GenerateKeyFile and "docket keygen -log" write) and returns the signer and
// its verifier key. Key files that group or others can read are refused.
func LoadSigner(path string) (note.Signer, string, error) {
	if err := receipts.CheckKeyFileMode(path); err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	s, vkey, err := NewSigner(string(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return s, vkey, nil
}

// NewCosigner returns a signer producing C2SP cosignature/v1 Ed25519
// cosignatures for the signed-note signer key skey (as GenerateKey makes it,
// type 0x01, or of type 0x04; surrounding white space is ignored), and the
// cosignature/v1 verifier key (type 0x04) that verifies them, which is what
// log operators put in their witness policy.
func NewCosigner(skey string) (note.Signer, string, error) {
	skey = strings.TrimSpace(skey)
	name, seed, err := seedOf(skey, sigEd25519, sigCosignatureV1)
	if err != nil {
		return nil, "", errors.New("malformed Ed25519 signer key")
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, "", fmt.Errorf("cosignature signer: %v", err)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	vkey := fmt.Sprintf("%s+%08x+%s", name, s.KeyHash(),
		base64.StdEncoding.EncodeToString(append([]byte{sigCosignatureV1}, pub...)))
	return s, vkey, nil
}

// GenerateKeyFile makes a new signer key named origin, writes it to path
// with mode 0600 (refusing to overwrite) and its verifier key to path+".pub",
// and returns the verifier key.
func GenerateKeyFile(path, origin string) (string, error) {
	skey, vkey, err := GenerateKey(origin)
	if err != nil {
		return "", fmt.Errorf("generating log key: %w", err)
	}
	if err := writeNew(path, []byte(skey+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(path+".pub", []byte(vkey+"\n"), 0o644); err != nil {
		return "", err
	}
	return vkey, nil
}

// WriteKeyFiles writes skey to path with mode 0600 and vkey to path+".pub",
// each followed by a newline, refusing to overwrite either file, and syncs
// both.
func WriteKeyFiles(path, skey, vkey string) error {
	if err := writeNew(path, []byte(skey+"\n"), 0o600); err != nil {
		return err
	}
	return writeNew(path+".pub", []byte(vkey+"\n"), 0o644)
}

// writeNew writes data to a file that must not exist yet, and syncs it.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
