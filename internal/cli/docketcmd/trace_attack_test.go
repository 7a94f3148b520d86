package docketcmd

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/hostiletest"
	"github.com/docketlog/docket/receipts"
)

// traceSession makes a project whose issuer key receipted one session (a
// start, an allowed call that ran) and returns the project's directory; the
// test runs in it.
func traceSession(t *testing.T, session string) string {
	t.Helper()
	project := t.TempDir()
	t.Setenv("CLAUDE_PROJECT_DIR", project)
	t.Setenv("HOME", t.TempDir())
	t.Chdir(project)
	if code, _, errs := runDocket(t, "", "init"); code != 0 {
		t.Fatalf("docket init = %d, %s", code, errs)
	}
	for _, ev := range []struct{ kind, json string }{
		{"session-start", `{"session_id":"` + session + `","hook_event_name":"SessionStart","source":"startup"}`},
		{"pre", `{"session_id":"` + session + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"t1"}`},
		{"post", `{"session_id":"` + session + `","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"t1","tool_response":{"stdout":""}}`},
	} {
		if code, _, errs := runDocket(t, ev.json, "hook", ev.kind); code != 0 {
			t.Fatalf("docket hook %s = %d, %s", ev.kind, code, errs)
		}
	}
	return project
}

// TestVerifyTraceFetchHostileServer is the attack of issue 20 §5 on
// docket verify -trace -fetch: a record signed by a trusted issuer names a
// transcript on a server that drips it, never answers, sends a gzip bomb, an
// endless body, a huge declared length, or redirects forever. Each fetch
// ends within its bounds (-timeout, and what the record's call count
// allows) and the record is undecidable (exit 2), never hung or exhausted.
func TestVerifyTraceFetchHostileServer(t *testing.T) {
	traceSession(t, "s1")
	srv := hostiletest.NewServer(t)
	tests := []struct {
		name, path, timeout, stderr string
	}{
		{"slow loris", hostiletest.Drip, "300ms", "took longer than 300ms"},
		{"no answer", hostiletest.Silent, "300ms", "took longer than 300ms"},
		{"gzip bomb", hostiletest.GzipBomb, "1m", "over the size limit: more than 4098 bytes"},
		{"endless body", hostiletest.Endless, "1m", "over the size limit: more than 4098 bytes"},
		{"1 GiB declared", hostiletest.Declared, "1m", "over the size limit: 1073741824 bytes, limit 4098"},
		{"redirect loop", hostiletest.Loop, "1m", "more than 5 redirects"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := strings.ReplaceAll(tt.name, " ", "-")
			if code, _, errs := runDocket(t, "", "export", "trace", "-session", "s1", "-o", dir, "-no-audit", "-transcript-uri", srv.URL+tt.path+"/transcript.json"); code != 0 {
				t.Fatalf("docket export trace = %d, %s", code, errs)
			}
			code, out, errs := runDocket(t, "", "verify", "-trace", filepath.Join(dir, "trust-record.json"), "-fetch", "-key-file", ".docket/issuer.key", "-timeout", tt.timeout)
			if code != 2 || !strings.Contains(out, "signature: valid") || !strings.Contains(out, "transcript: undecidable: missing") || !strings.Contains(errs, tt.stderr) {
				t.Fatalf("docket verify -trace -fetch (%s) = %d, %q, %q; want 2, the transcript missing, %q", tt.name, code, out, errs, tt.stderr)
			}
		})
	}
}

// TestVerifyTraceCaseFoldedKey is the attack of issue 20 §5 on TRACE: a
// record signed by issuer A whose cnf.jwk carries A's key as "x" and B's as
// "X" verified over issuer B's session, because the signer the receipts were
// compared with came from a second, case-insensitive decode. Both issuers
// are trusted; the record must not verify.
func TestVerifyTraceCaseFoldedKey(t *testing.T) {
	traceSession(t, "s1")
	if code, _, errs := runDocket(t, "", "export", "trace", "-session", "s1", "-o", "b", "-no-audit"); code != 0 {
		t.Fatalf("docket export trace = %d, %s", code, errs)
	}
	keyB, err := receipts.LoadPrivateKey(filepath.Join(".docket", "issuer.key"))
	if err != nil {
		t.Fatal(err)
	}
	pubB := keyB.Public().(ed25519.PublicKey)
	pubA, keyA, _ := ed25519.GenerateKey(nil)
	jwks, _ := json.Marshal(map[string]any{"keys": []any{receipts.JWK(pubA), receipts.JWK(pubB)}})
	if err := os.WriteFile("both.jwks", jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	// resign replaces the record's cnf.jwk with jwk (members in that order)
	// and signs it with A, over the JCS bytes of all its members.
	resign := func(name, jwk string) string {
		var rec map[string]any
		if err := json.Unmarshal(mustRead(t, filepath.Join("b", "trust-record.json")), &rec); err != nil {
			t.Fatal(err)
		}
		delete(rec, "signature")
		delete(rec, "cnf")
		body, _ := json.Marshal(rec)
		doc := []byte(strings.TrimSuffix(string(body), "}") + `,"cnf":{"jwk":` + jwk + `}}`)
		msg, err := receipts.CanonicalizeJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		doc = []byte(strings.TrimSuffix(string(doc), "}") + `,"signature":"` + b64(ed25519.Sign(keyA, msg)) + `"}`)
		path := filepath.Join("b", name)
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The control: A's record over B's session is refused for what it is.
	plain := resign("a.json", `{"kty":"OKP","crv":"Ed25519","x":"`+b64(pubA)+`"}`)
	code, out, _ := runDocket(t, "", "verify", "-trace", plain, "-jwks", "both.jwks")
	if code != 1 || !strings.Contains(out, "signature: valid") || !strings.Contains(out, "receipts: invalid: issuer_mismatch") {
		t.Fatalf("docket verify -trace (A's record, B's session) = %d, %q; want 1 issuer_mismatch", code, out)
	}
	for _, jwk := range []string{
		`{"kty":"OKP","crv":"Ed25519","x":"` + b64(pubA) + `","X":"` + b64(pubB) + `"}`,
		`{"X":"` + b64(pubB) + `","kty":"OKP","crv":"Ed25519","x":"` + b64(pubA) + `"}`,
		`{"kty":"OKP","crv":"Ed25519","x":"` + b64(pubA) + `","KTY":"OKP"}`,
	} {
		path := resign("folded.json", jwk)
		code, out, _ := runDocket(t, "", "verify", "-trace", path, "-jwks", "both.jwks")
		if code != 2 || !strings.Contains(out, "signature: undecidable: malformed") || !strings.Contains(out, "differ only in case") || strings.Contains(out, "VALID\n") {
			t.Fatalf("docket verify -trace (cnf.jwk %s) = %d, %q; want 2, members that differ only in case", jwk, code, out)
		}
	}
}
