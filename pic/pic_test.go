package pic_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestEvidenceChosenByTheProposer is the attack of issue 20 §5: the
// proposal names its evidence, so a FIFO (which blocked the open, past the
// time budget, and every later call of docket mcp with it), a device, a
// directory, a huge file, or a link out of the root must each be refused at
// once, and the whole verification must stay within its budget.
func TestEvidenceChosenByTheProposer(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"zero": "/dev/zero", "to-fifo": "fifo", "out": filepath.Join(t.TempDir(), "x")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	huge, err := os.Create(filepath.Join(root, "huge"))
	if err != nil {
		t.Fatal(err)
	}
	if err := huge.Truncate(1 << 30); err != nil { // sparse: 1 GiB of zeros
		t.Fatal(err)
	}
	huge.Close()
	args := map[string]any{"amount": json.Number("500")}
	for _, tt := range []struct{ ref, reason string }{
		{"fifo", "not a regular file"},
		{"to-fifo", "not a regular file"},
		{"zero", ""}, // a link out of the root
		{"/dev/zero", "escapes the evidence root"},
		{"out", ""},
		{"dir", "not a regular file"},
		{"huge", "over the size limit"},
		{filepath.Join(root, "fifo"), "not a regular file"},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			proposal := signedProposal(t, priv, "pay", args, tt.ref, nil)
			res, err := pic.Verify(t.Context(), proposal, pic.Options{Tool: "pay", Args: args, Keys: keyring(t, pub), EvidenceRoot: root})
			var pe *pic.Error
			if !errors.As(err, &pe) || pe.Code != pic.CodeEvidenceFailed || !strings.Contains(pe.Msg, tt.reason) {
				t.Fatalf("Verify(evidence %s) = %+v, %v; want %s naming %q", tt.ref, res, err, pic.CodeEvidenceFailed, tt.reason)
			}
		})
	}
	// A budget already spent is reported as such, not as a read error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := pic.Verify(ctx, signedProposal(t, priv, "pay", args, "huge", nil), pic.Options{Keys: keyring(t, pub), EvidenceRoot: root}); err == nil {
		t.Fatal("Verify(canceled) = nil error")
	}
}

// TestFoldDuplicateMembers: members whose names differ only in case, in the
// proposal (at any depth) or in an attestation, are refused: a server
// decoding the arguments without regard to case would see another call.
func TestFoldDuplicateMembers(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	args := map[string]any{"amount": json.Number("500"), "Amount": json.Number("5")}
	for _, tt := range []struct {
		name     string
		proposal []byte
	}{
		{"in action.args", signedProposal(t, priv, "pay", args, "", nil)},
		{"at the top", []byte(strings.Replace(string(signedProposal(t, priv, "pay", map[string]any{}, "", nil)), `"intent":"pay"`, `"intent":"pay","Intent":"refund"`, 1))},
		{"kelvin sign", []byte(strings.Replace(string(signedProposal(t, priv, "pay", map[string]any{"k": "1"}, "", nil)), `"k":"1"`, `"k":"1","\u212a":"2"`, 1))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pic.Verify(t.Context(), tt.proposal, pic.Options{Keys: keyring(t, pub)})
			var pe *pic.Error
			if !errors.As(err, &pe) || pe.Code != pic.CodeSchemaInvalid || !strings.Contains(pe.Msg, "differ only in case") {
				t.Fatalf("Verify = %+v, %v; want %s (differ only in case)", res, err, pic.CodeSchemaInvalid)
			}
		})
	}
	// An attestation whose own members differ only in case.
	att := `{"attestation_version":"PIC-ATT/1.0","tool":"pay","Tool":"refund"}`
	p := signedProposal(t, priv, "pay", map[string]any{}, "", nil)
	var m map[string]any
	if err := json.Unmarshal(p, &m); err != nil {
		t.Fatal(err)
	}
	ev := m["evidence"].([]any)[0].(map[string]any)
	ev["payload"], ev["signature"] = att, base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(att)))
	p, _ = json.Marshal(m)
	var pe *pic.Error
	if _, err := pic.Verify(t.Context(), p, pic.Options{Keys: keyring(t, pub)}); !errors.As(err, &pe) || pe.Code != pic.CodeEvidenceFailed || !strings.Contains(pe.Msg, "differ only in case") {
		t.Fatalf("Verify(attestation with Tool and tool) = %v, want %s (differ only in case)", err, pic.CodeEvidenceFailed)
	}
	if _, err := pic.ParseKeyring([]byte(`{"trusted_keys":{"k1":"` + base64.StdEncoding.EncodeToString(pub) + `"},"Trusted_Keys":{}}`)); err == nil {
		t.Fatal("ParseKeyring(trusted_keys and Trusted_Keys) = nil error")
	}
}
