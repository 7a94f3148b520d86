package receipts

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/strictjson"
)

// foldedReceipts returns draft-04 receipts signed by key whose payload,
// signature or a nested object holds two members whose names differ only
// in case: Docket reads the exact name, a verifier built on encoding/json
// the last of them, so each is refused whatever its signature.
func foldedReceipts(t testing.TB, key ed25519.PrivateKey) map[string][]byte {
	t.Helper()
	kid := KID(pub(key))
	head := `{"decision":"allow","issued_at":"2026-11-21T12:00:00.000Z","issuer_id":"` + kid + `",`
	tail := `"session_id":"s","spec":"` + Spec + `","tool_name":"Bash","type":"protectmcp:decision"}`
	out := make(map[string][]byte)
	for name, payload := range map[string]string{
		"payload member":    head + `"Tool_name":"rm",` + tail,
		"all upper":         head + `"TOOL_NAME":"rm",` + tail,
		"nested object":     head + `"confinement":{"Digest":"b","digest":"a"},` + tail,
		"object in a list":  head + `"open_sessions":[{"A":1,"a":2}],` + tail,
		"Kelvin sign":       head + `"\u212aind":"x","kind":"y",` + tail,
		"decision in upper": `{"DECISION":"deny",` + head[1:] + tail,
	} {
		c, err := CanonicalizeJSON([]byte(payload))
		if err != nil {
			t.Fatalf("CanonicalizeJSON(%s) = %v", payload, err)
		}
		out[name] = SignCanonical(key, c)
	}
	return out
}

// TestFoldedMembers checks that a signed receipt or log entry with members
// whose names fold alike is undecidable (malformed) to Verify and
// VerifyChain, refused by ParseEntry (and so by the log) and by Open.
func TestFoldedMembers(t *testing.T) {
	key, _ := GenerateKey()
	keys := PinnedKey(pub(key))
	for name, r := range foldedReceipts(t, key) {
		t.Run(name, func(t *testing.T) {
			if res := Verify(r, Options{Keys: keys}); res.Outcome != Undecidable || res.Cause != CauseMalformed || !strings.Contains(res.Detail, "differ only in case") {
				t.Errorf("Verify(%s) = %v %s (%s), want undecidable %s", r, res.Outcome, res.Cause, res.Detail, CauseMalformed)
			}
			if res := VerifyChain([][]byte{r}, Options{Keys: keys}); res[0].Outcome != Undecidable {
				t.Errorf("VerifyChain(%s) = %v %s, want undecidable", r, res[0].Outcome, res[0].Cause)
			}
			entry := []byte(`{"public_key":"` + hex.EncodeToString(pub(key)) + `","receipt":` + string(r) + `}`)
			var fe *strictjson.FoldError
			if _, err := ParseEntry(entry); !errors.Is(err, ErrMalformedEntry) || !errors.As(err, &fe) {
				t.Errorf("ParseEntry = %v, want ErrMalformedEntry with a *strictjson.FoldError", err)
			}
			if _, err := NewEntry(pub(key), r); !errors.Is(err, ErrMalformedEntry) {
				t.Errorf("NewEntry = %v, want ErrMalformedEntry", err)
			}
		})
	}
	// The same receipt without the second member is valid: what is refused
	// is the pair, not the key or the signature.
	r := SignCanonical(key, must(CanonicalizeJSON([]byte(`{"issued_at":"2026-11-21T12:00:00.000Z","issuer_id":"`+KID(pub(key))+`","session_id":"s","spec":"`+Spec+`","tool_name":"Bash","type":"protectmcp:decision"}`))))
	if res := Verify(r, Options{Keys: keys}); res.Outcome != Valid {
		t.Errorf("Verify(receipt without a folded pair) = %v %s (%s), want valid", res.Outcome, res.Cause, res.Detail)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
