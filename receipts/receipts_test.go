package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signChain signs a session chain the way the hook does: a decision, its
// execution, and a deny, repeated.
func signChain(t testing.TB, key ed25519.PrivateKey, n int) [][]byte {
	t.Helper()
	var chain [][]byte
	prev, lastAllow := "", ""
	for i := range n {
		p := Payload{
			Type: TypeDecision, SessionID: "sess-1", Sequence: int64(i + 1), PreviousReceiptHash: prev,
			IssuedAt: FormatTime(time.Date(2026, 11, 21, 12, 0, i%60, 0, time.UTC)),
			Agent:    "claude-code", ToolName: "Bash", ToolInputHash: "sha256:" + strings.Repeat("ab", 32),
			PolicyDigest: "sha256:" + strings.Repeat("cd", 32), PolicyIDs: []string{"allow-git"},
		}
		switch i % 3 {
		case 0:
			p.HookEvent, p.Decision, p.Reason = "PreToolUse", Allow, "cedar_allow"
		case 1:
			p.HookEvent, p.Decision, p.DecisionReceiptHash = "PostToolUse", Allow, lastAllow
			ms := int64(12)
			p.ToolDurationMs = &ms
		case 2:
			p.HookEvent, p.Decision, p.Reason = "PreToolUse", Deny, "cedar_deny"
		}
		r, err := Sign(key, p)
		if err != nil {
			t.Fatal(err)
		}
		prev = ChainHash(r)
		if i%3 == 0 {
			lastAllow = prev
		}
		chain = append(chain, r)
	}
	return chain
}

func allValid(results []Result) error {
	for i, r := range results {
		if r.Outcome != Valid {
			return fmt.Errorf("receipt %d: %v %s: %s", i+1, r.Outcome, r.Cause, r.Detail)
		}
	}
	return nil
}

func TestSignVerifyRoundTrip(t *testing.T) {
	key, _ := GenerateKey()
	chain := signChain(t, key, 6)
	keys := PinnedKey(pub(key))
	if err := allValid(VerifyChain(chain, Options{Keys: keys, SessionID: "sess-1"})); err != nil {
		t.Fatalf("VerifyChain(signed chain) = %v, want all valid", err)
	}
	for i, r := range chain {
		c, err := CanonicalizeJSON(r)
		if err != nil || !bytes.Equal(c, r) {
			t.Fatalf("receipt %d is not in JCS form: %s", i+1, r)
		}
		if bytes.Contains(r, []byte("null")) {
			t.Errorf("receipt %d has a null member: %s", i+1, r)
		}
	}
	// Changing any byte of any receipt is caught (the first three cover
	// every kind of receipt and link).
	for i := range 3 {
		for j := range chain[i] {
			mutated := make([][]byte, 3)
			copy(mutated, chain)
			mutated[i] = bytes.Clone(chain[i])
			mutated[i][j] ^= 0x01
			if err := allValid(VerifyChain(mutated, Options{Keys: keys})); err == nil {
				t.Fatalf("flipping byte %d of receipt %d (%q) went unnoticed", j, i+1, chain[i][j])
			}
		}
	}
	tests := []struct {
		name  string
		chain [][]byte
		at    int
		cause string
	}{
		{"dropped receipt", [][]byte{chain[0], chain[1], chain[3]}, 2, CauseChainBreak},
		{"swapped receipts", [][]byte{chain[1], chain[0]}, 1, CauseChainBreak},
		{"execution without its decision", chain[1:3], 0, CauseUnlinkedExec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := VerifyChain(tt.chain, Options{Keys: keys})[tt.at]
			if r.Outcome != Invalid || r.Cause != tt.cause {
				t.Errorf("VerifyChain[%d] = %v %s, want invalid %s", tt.at, r.Outcome, r.Cause, tt.cause)
			}
		})
	}
}

func TestSequenceGapAndSessionMix(t *testing.T) {
	key, _ := GenerateKey()
	a, _ := Sign(key, Payload{Type: TypeLifecycle, SessionID: "s", Sequence: 1, LifecycleEvent: "session_start"})
	gap, _ := Sign(key, Payload{Type: TypeLifecycle, SessionID: "s", Sequence: 3, PreviousReceiptHash: ChainHash(a)})
	other, _ := Sign(key, Payload{Type: TypeLifecycle, SessionID: "t", Sequence: 2, PreviousReceiptHash: ChainHash(a)})
	keys := PinnedKey(pub(key))
	if r := VerifyChain([][]byte{a, gap}, Options{Keys: keys})[1]; r.Cause != CauseSequence {
		t.Errorf("VerifyChain(gap) = %v %s, want sequence_gap", r.Outcome, r.Cause)
	}
	if r := VerifyChain([][]byte{a, other}, Options{Keys: keys})[1]; r.Cause != CauseSession {
		t.Errorf("VerifyChain(two sessions) = %v %s, want session_mismatch", r.Outcome, r.Cause)
	}
}

func TestSignRefusesForeignIssuer(t *testing.T) {
	key, _ := GenerateKey()
	if _, err := Sign(key, Payload{Type: TypeDecision, SessionID: "s", IssuerID: "sb:issuer:someoneelse"}); err == nil {
		t.Error("Sign(foreign issuer_id) = nil error, want refusal")
	}
	if _, err := Sign(key, Payload{Type: TypeDecision}); err == nil {
		t.Error("Sign(no session) = nil error, want refusal")
	}
}

func TestKeyWindowsAndKIDs(t *testing.T) {
	key, kf := GenerateKey()
	r, _ := Sign(key, Payload{Type: TypeDecision, SessionID: "s", IssuedAt: "2026-06-01T00:00:00.000Z"})
	jwks := func(from, until string) *KeySet {
		t.Helper()
		x := JWK(pub(key))["x"]
		doc := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":%q,"x":%q%s%s}]}`, kf.KID, x,
			map[bool]string{true: `,"valid_from":"` + from + `"`}[from != ""], map[bool]string{true: `,"valid_until":"` + until + `"`}[until != ""])
		s, err := ParseJWKS([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name  string
		keys  *KeySet
		want  Outcome
		cause string
	}{
		{"no window", jwks("", ""), Valid, ""},
		{"inside window", jwks("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"), Valid, ""},
		{"before window", jwks("2026-07-01T00:00:00Z", ""), Invalid, CauseKeyOutsideWindow},
		{"after window", jwks("", "2026-05-01T00:00:00Z"), Invalid, CauseKeyOutsideWindow},
		{"no keys", nil, Undecidable, CauseNoTrustedKey},
		{"other issuer's key", &KeySet{Keys: []Key{{ID: "x", Public: pub(bystanderKey)}}}, Undecidable, CauseNoTrustedKey},
		{"pinned wrong key", PinnedKey(pub(bystanderKey)), Invalid, CauseKIDMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Verify(r, Options{Keys: tt.keys})
			if got.Outcome != tt.want || got.Cause != tt.cause {
				t.Errorf("Verify = %v %s (%s), want %v %s", got.Outcome, got.Cause, got.Detail, tt.want, tt.cause)
			}
		})
	}
	for _, bad := range []string{`{"keys":[]}`, `{"keys":[{"kty":"EC","crv":"P-256","x":"AA"}]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + JWK(pub(key))["x"].(string) + `","valid_from":"yesterday"}]}`} {
		if _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("ParseJWKS(%s) = nil error, want refusal", bad)
		}
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, kf := GenerateKey()
	path := filepath.Join(dir, "issuer.key")
	if err := WriteKeyFile(path, kf); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(path, kf); err == nil {
		t.Error("WriteKeyFile over an existing file = nil error, want refusal")
	}
	got, err := LoadPrivateKey(path)
	if err != nil || !got.Equal(key) {
		t.Fatalf("LoadPrivateKey = %v, want the written key", err)
	}
	os.Chmod(path, 0o640)
	if _, err := LoadPrivateKey(path); !errors.Is(err, ErrKeyPermissions) {
		t.Errorf("LoadPrivateKey(0640) = %v, want ErrKeyPermissions", err)
	}
	os.Chmod(path, 0o600)
	set, err := LoadKeySet(path)
	if err != nil || !set.Keys[0].Public.Equal(pub(key)) {
		t.Errorf("LoadKeySet(key file) = %v, want its public key", err)
	}
	hexPath := filepath.Join(dir, "pub.hex")
	os.WriteFile(hexPath, []byte(hex.EncodeToString(pub(key))+"\n"), 0o644)
	if set, err := LoadKeySet(hexPath); err != nil || !set.Keys[0].Public.Equal(pub(key)) {
		t.Errorf("LoadKeySet(hex file) = %v, want the key", err)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte(`{"privateKey":"`+kf.PrivateKey+`","publicKey":"`+hex.EncodeToString(pub(bystanderKey))+`"}`), 0o600)
	if _, err := LoadPrivateKey(bad); err == nil {
		t.Error("LoadPrivateKey(mismatched public key) = nil error, want refusal")
	}
}

func TestEntries(t *testing.T) {
	key, _ := GenerateKey()
	r := signChain(t, key, 1)[0]
	leaf, err := NewEntry(pub(key), r)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEntry(leaf)
	if err != nil || !bytes.Equal(e.Leaf(), leaf) || e.SessionID != "sess-1" || e.Sequence != 1 {
		t.Fatalf("ParseEntry(NewEntry) = %+v, %v; want the same leaf back", e, err)
	}
	// A pretty-printed entry canonicalizes to the same leaf (so dedup holds).
	pretty := []byte("{\n  \"receipt\": " + string(r) + ",\n  \"public_key\": \"" + hex.EncodeToString(pub(key)) + "\"\n}")
	if e, err := ParseEntry(pretty); err != nil || !bytes.Equal(e.Leaf(), leaf) {
		t.Errorf("ParseEntry(pretty) = %v, want the canonical leaf", err)
	}
	tampered := bytes.Replace(leaf, []byte(`"Bash"`), []byte(`"Read"`), 1)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"not json", []byte("hello"), ErrMalformedEntry},
		{"extra member", []byte(`{"public_key":"` + hex.EncodeToString(pub(key)) + `","receipt":` + string(r) + `,"x":1}`), ErrMalformedEntry},
		{"uppercase key", []byte(`{"public_key":"` + strings.ToUpper(hex.EncodeToString(pub(key))) + `","receipt":` + string(r) + `}`), ErrMalformedEntry},
		{"flat receipt", []byte(`{"public_key":"` + hex.EncodeToString(pub(key)) + `","receipt":{"a":1,"signature":"00"}}`), ErrMalformedEntry},
		{"other key", []byte(`{"public_key":"` + hex.EncodeToString(pub(bystanderKey)) + `","receipt":` + string(r) + `}`), ErrEntrySignature},
		{"tampered", tampered, ErrEntrySignature},
		{"too large", bytes.Repeat([]byte(" "), MaxEntrySize+1), ErrEntryTooLarge},
		{"non-ASCII key", bytes.Replace(leaf, []byte(`"tool_name"`), []byte(`"tool_näme"`), 1), ErrMalformedEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseEntry(tt.in); !errors.Is(err, tt.want) {
				t.Errorf("ParseEntry = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestPolicyDigestOrder(t *testing.T) {
	a := []PolicyFile{{Name: "b.cedar", Data: []byte("x")}, {Name: "a.cedar", Data: []byte("y")}}
	b := []PolicyFile{a[1], a[0]}
	da, _ := PolicyDigest(a)
	db, _ := PolicyDigest(b)
	if da != db || !strings.HasPrefix(da, "sha256:") {
		t.Errorf("PolicyDigest depends on order: %s vs %s", da, db)
	}
	if _, err := PolicyDigest([]PolicyFile{a[0], a[0]}); err == nil {
		t.Error("PolicyDigest(duplicate names) = nil error, want refusal")
	}
}

// BenchmarkVerify measures verifying one Docket receipt: strict parse, JCS,
// key lookup and one Ed25519 verification.
func BenchmarkVerify(b *testing.B) {
	key, _ := GenerateKey()
	r := signChain(b, key, 1)[0]
	opts := Options{Keys: PinnedKey(pub(key))}
	for b.Loop() {
		if Verify(r, opts).Outcome != Valid {
			b.Fatal("not valid")
		}
	}
}

// BenchmarkSign measures signing one receipt.
func BenchmarkSign(b *testing.B) {
	key, _ := GenerateKey()
	p := Payload{Type: TypeDecision, SessionID: "s", Sequence: 1, ToolName: "Bash", Decision: Allow}
	for b.Loop() {
		if _, err := Sign(key, p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestUnlinkedExecution(t *testing.T) {
	key, _ := GenerateKey()
	a, _ := Sign(key, Payload{Type: TypeLifecycle, SessionID: "s", Sequence: 1, LifecycleEvent: "session_start"})
	exec, _ := Sign(key, Payload{Type: TypeDecision, SessionID: "s", Sequence: 2, PreviousReceiptHash: ChainHash(a),
		HookEvent: "PostToolUse", ToolName: "Bash", Decision: Allow, Reason: "unlinked_execution"})
	if r := VerifyChain([][]byte{a, exec}, Options{Keys: PinnedKey(pub(key))})[1]; r.Cause != CauseUnlinkedExec {
		t.Errorf("VerifyChain(execution without decision) = %v %s, want unlinked_execution", r.Outcome, r.Cause)
	}
}

func TestParseSpansCanonical(t *testing.T) {
	tests := []struct {
		in        string
		canonical bool
	}{
		{`{"a":1,"b":[true,null,"x"]}`, true},
		{`{"a":"\u001f\n\"\\"}`, true},
		{`{"a":"é✓"}`, true},
		{`{"a":-123456789012345}`, true},
		{`{"b":1,"a":2}`, false},
		{`{"a": 1}`, false},
		{` {"a":1}`, false},
		{`{"a":"\/"}`, false},
		{`{"a":"\u0041"}`, false},
		{`{"a":"\u001F"}`, false},
		{`{"a":"\u000a"}`, false},
		{`{"a":1.0}`, false},
		{`{"a":1e2}`, false},
		{`{"a":-0}`, false},
		{`{"a":1234567890123456}`, false},
		{`{"a":{"d":1,"c":2}}`, false},
	}
	for _, tt := range tests {
		_, got, _, err := parseSpans([]byte(tt.in))
		if err != nil || got != tt.canonical {
			t.Errorf("parseSpans(%s) canonical = %v, %v; want %v", tt.in, got, err, tt.canonical)
		}
		// Calling input canonical must be right; the converse may be
		// conservative (a 16-digit integer takes the slow path).
		if c, _ := CanonicalizeJSON([]byte(tt.in)); got && string(c) != tt.in {
			t.Errorf("parseSpans(%s) called canonical, JCS is %s", tt.in, c)
		}
	}
}
