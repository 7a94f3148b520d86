package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// unsignedForms returns variants of a signed draft-04 receipt that change
// only what its signature does not cover. Each must be refused, or one
// signed receipt could be logged and chained in many forms (issue 10 §1).
func unsignedForms(r []byte) map[string][]byte {
	other, _ := GenerateKey()
	jwk := `{"kty":"OKP","crv":"Ed25519","x":"` + hex.EncodeToString(pub(other)) + `"}`
	sigStart := bytes.Index(r, []byte(`"signature":{`)) + len(`"signature":{`)
	insert := func(at int, s string) []byte {
		return append(append(bytes.Clone(r[:at]), s...), r[at:]...)
	}
	sig := r[bytes.Index(r, []byte(`"sig":"`))+len(`"sig":"`):]
	sig = sig[:bytes.IndexByte(sig, '"')]
	return map[string][]byte{
		"member in signature": insert(sigStart, `"x":1,`),
		"jwk in signature":    insert(sigStart, `"jwk":`+jwk+`,`),
		"member at top level": insert(1, `"x":1,`),
		"uppercase sig":       bytes.Replace(r, sig, bytes.ToUpper(sig), 1),
		"longer sig":          bytes.Replace(r, sig, append(bytes.Clone(sig), "00"...), 1),
		"numeric kid":         bytes.Replace(r, []byte(`"kid":"`), []byte(`"kid":1,"k":"`), 1),
	}
}

func TestUnsignedMembers(t *testing.T) {
	key, _ := GenerateKey()
	r := signChain(t, key, 1)[0]
	if res := Verify(r, Options{Keys: PinnedKey(pub(key))}); res.Outcome != Valid {
		t.Fatalf("Verify(signed receipt) = %v %s, want valid", res.Outcome, res.Cause)
	}
	for name, form := range unsignedForms(r) {
		t.Run(name, func(t *testing.T) {
			entry := []byte(`{"public_key":"` + hex.EncodeToString(pub(key)) + `","receipt":` + string(form) + `}`)
			_, err := ParseEntry(entry)
			if !errors.Is(err, ErrMalformedEntry) || !strings.Contains(err.Error(), "member") {
				t.Errorf("ParseEntry = %v, want ErrMalformedEntry naming the member", err)
			}
			res := Verify(form, Options{Keys: PinnedKey(pub(key))})
			if res.Outcome != Invalid || res.Cause != CauseUnsignedMember {
				t.Errorf("Verify = %v %s (%s), want invalid %s", res.Outcome, res.Cause, res.Detail, CauseUnsignedMember)
			}
		})
	}
}

// TestUnsignedMembersOtherShapes checks that only Docket's own shape is held
// to the one byte form: an envelope of an earlier draft keeps its rules.
func TestUnsignedMembersOtherShapes(t *testing.T) {
	key, _ := GenerateKey()
	payload := []byte(`{"spec":"draft-farley-acta-signed-receipts-01","type":"x"}`)
	sig := hex.EncodeToString(ed25519.Sign(key, payload))
	r := []byte(`{"payload":` + string(payload) + `,"signature":{"alg":"EdDSA","kid":"k","sig":"` + sig + `","x":1}}`)
	res := Verify(r, Options{Keys: PinnedKey(pub(key))})
	if res.Cause == CauseUnsignedMember {
		t.Errorf("Verify(draft-01 envelope with a member in signature) = %v %s, want its own rules", res.Outcome, res.Cause)
	}
}
