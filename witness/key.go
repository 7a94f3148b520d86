package witness

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// NewCosigner returns a signer producing C2SP cosignature/v1 Ed25519
// cosignatures for the signed-note signer key skey (as written by
// golang.org/x/mod/sumdb/note.GenerateKey; surrounding white space is
// ignored), and the cosignature/v1 verifier key (signature type 0x04) that
// verifies them, which is what log operators put in their witness policy.
func NewCosigner(skey string) (note.Signer, string, error) {
	skey = strings.TrimSpace(skey)
	errKey := errors.New("malformed Ed25519 signer key")
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, "", errKey
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || (raw[0] != 0x01 && raw[0] != 0x04) {
		return nil, "", errKey
	}
	s, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		return nil, "", fmt.Errorf("cosignature signer: %v", err)
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey := fmt.Sprintf("%s+%08x+%s", s.Name(), s.KeyHash(),
		base64.StdEncoding.EncodeToString(append([]byte{0x04}, pub...)))
	return s, vkey, nil
}
