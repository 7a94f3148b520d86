package pic_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/receipts"
)

// signedProposal builds a money proposal for tool with args, backed by a
// canonical PIC-ATT/1.0 attestation signed by key "k1", and hash evidence
// over file (relative to the evidence root) when file is not "".
func signedProposal(t testing.TB, priv ed25519.PrivateKey, tool string, args map[string]any, file string, content []byte) []byte {
	t.Helper()
	digest := func(v any) string {
		c, err := receipts.Canonicalize(v)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(c)
		return hex.EncodeToString(s[:])
	}
	claims := []any{map[string]any{"text": "approved", "evidence": []any{"approval"}}}
	att := map[string]any{"attestation_version": "PIC-ATT/1.0", "tool": tool, "impact": "money",
		"args_digest": digest(args), "claims_digest": digest(claims), "provenance_ids": []any{"approval"}}
	payload, err := receipts.Canonicalize(att)
	if err != nil {
		t.Fatal(err)
	}
	evs := []any{map[string]any{"id": "approval", "type": "sig", "ref": "inline:approval", "payload": string(payload),
		"alg": "ed25519", "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(priv, payload)), "key_id": "k1"}}
	if file != "" {
		s := sha256.Sum256(content)
		evs = append(evs, map[string]any{"id": "invoice", "type": "hash", "ref": "file://" + file, "sha256": hex.EncodeToString(s[:])})
	}
	p := map[string]any{"protocol": "PIC/1.0", "intent": "pay", "impact": "money",
		"provenance": []any{map[string]any{"id": "approval", "trust": "untrusted"}},
		"claims":     claims, "action": map[string]any{"tool": tool, "args": args}, "evidence": evs}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keyring(t testing.TB, pub ed25519.PublicKey) *pic.Keyring {
	t.Helper()
	k, err := pic.ParseKeyring([]byte(`{"trusted_keys":{"k1":"` + base64.StdEncoding.EncodeToString(pub) + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "invoice.txt"), []byte("invoice 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"amount": json.Number("500")}
	good := signedProposal(t, priv, "pay", args, "invoice.txt", []byte("invoice 1"))
	tests := []struct {
		name     string
		proposal []byte
		o        pic.Options
		code     string // "" means verified
	}{
		{"verified", good, pic.Options{Tool: "pay", Args: args}, ""},
		{"tool binding", good, pic.Options{Tool: "pay2", Args: args}, pic.CodeToolBindingMismatch},
		{"tool binding is exact", good, pic.Options{Tool: "pay ", Args: args}, pic.CodeToolBindingMismatch},
		{"args not covered", good, pic.Options{Tool: "pay", Args: map[string]any{"amount": json.Number("5000")}}, pic.CodeArgsMismatch},
		{"extra argument", good, pic.Options{Tool: "pay", Args: map[string]any{"amount": json.Number("500"), "to": "x"}}, pic.CodeArgsMismatch},
		{"no keyring", good, pic.Options{Tool: "pay"}, pic.CodeEvidenceFailed},
		{"no evidence root", good, pic.Options{Tool: "pay"}, pic.CodeEvidenceFailed},
		{"hash mismatch", signedProposal(t, priv, "pay", args, "invoice.txt", []byte("invoice 2")), pic.Options{}, pic.CodeEvidenceFailed},
		{"dot-dot escape", signedProposal(t, priv, "pay", args, "../"+filepath.Base(outside)+"/secret.txt", []byte("secret")), pic.Options{}, pic.CodeEvidenceFailed},
		{"absolute escape", signedProposal(t, priv, "pay", args, filepath.Join(outside, "secret.txt"), []byte("secret")), pic.Options{}, pic.CodeEvidenceFailed},
		{"symlink escape", signedProposal(t, priv, "pay", args, "link.txt", []byte("secret")), pic.Options{}, pic.CodeEvidenceFailed},
		{"absolute inside the root", signedProposal(t, priv, "pay", args, filepath.Join(root, "invoice.txt"), []byte("invoice 1")), pic.Options{}, ""},
		{"duplicate key", []byte(strings.Replace(string(good), `"intent":"pay"`, `"intent":"pay","intent":"pay"`, 1)), pic.Options{}, pic.CodeSchemaInvalid},
		{"duplicate provenance id", []byte(strings.Replace(string(good), `"provenance":[{"id":"approval","trust":"untrusted"}]`,
			`"provenance":[{"id":"approval","trust":"untrusted"},{"id":"approval","trust":"untrusted"}]`, 1)), pic.Options{}, pic.CodeDuplicateID},
		{"semi_trusted is gone", []byte(strings.Replace(string(good), `"trust":"untrusted"`, `"trust":"semi_trusted"`, 1)), pic.Options{}, pic.CodeSchemaInvalid},
		{"too large", good, pic.Options{Limits: pic.Limits{MaxProposalBytes: 100}}, pic.CodeLimitExceeded},
		{"too many items", good, pic.Options{Limits: pic.Limits{MaxItems: 1}}, pic.CodeLimitExceeded},
		{"evidence file too large", good, pic.Options{Limits: pic.Limits{MaxFileBytes: 3}}, pic.CodeEvidenceFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if o.Keys == nil && tt.name != "no keyring" {
				o.Keys = keyring(t, pub)
			}
			if o.EvidenceRoot == "" && tt.name != "no evidence root" {
				o.EvidenceRoot = root
			}
			if tt.name == "no evidence root" {
				o.Keys = keyring(t, pub)
			}
			res, err := pic.Verify(t.Context(), tt.proposal, o)
			if tt.code == "" {
				if err != nil || res.Impact != "money" || !res.TrustedClaims || len(res.Trusted) != 1 || len(res.Verified) != 2 || !strings.HasPrefix(res.Digest, "sha256:") {
					t.Fatalf("Verify = %+v, %v; want verified with trusted evidence", res, err)
				}
				return
			}
			var pe *pic.Error
			if !errors.As(err, &pe) || pe.Code != tt.code {
				t.Fatalf("Verify = %+v, %v; want %s", res, err, tt.code)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	f.Add(signedProposal(f, priv, "pay", map[string]any{"a": "b"}, "", nil))
	f.Add([]byte(`{"protocol":"PIC/1.0","intent":"x","impact":"read","provenance":[],"claims":[],"action":{"tool":"t","args":{}}}`))
	f.Add([]byte(`{"trusted_keys":{"a":"AAAA"},"revoked_keys":["a"]}`))
	k := keyring(f, pub)
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := pic.Verify(t.Context(), data, pic.Options{Keys: k, EvidenceRoot: root})
		if err == nil && (res.Digest == "" || pic.HighImpact(res.Impact) && !res.TrustedClaims) {
			t.Fatalf("Verify = %+v without error", res)
		}
		_, _ = pic.ParseKeyring(data)
	})
}
