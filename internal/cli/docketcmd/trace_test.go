package docketcmd

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestVerifyTraceVectors: docket verify -trace accepts the four records of
// trace-spec's canonicalization-boundary set (signed over RFC 8785 bytes),
// with their trusted key as a JWKS and no age limit (they are fixed in
// time), and rejects them under another key.
func TestVerifyTraceVectors(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/vectors/trace-canonicalization/*.json")
	if err != nil || len(files) != 4 {
		t.Fatalf("vectors: %v, %d files, want 4", err, len(files))
	}
	dir := t.TempDir()
	for _, f := range files {
		var v struct {
			TrustedKey map[string]any  `json:"trusted_key"`
			Record     json.RawMessage `json:"record"`
		}
		if err := json.Unmarshal(mustRead(t, f), &v); err != nil {
			t.Fatal(err)
		}
		record := filepath.Join(dir, filepath.Base(f))
		jwks := filepath.Join(dir, "jwks-"+filepath.Base(f))
		j, _ := json.Marshal(map[string]any{"keys": []any{v.TrustedKey}})
		if err := os.WriteFile(record, v.Record, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(jwks, j, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := runDocket(t, "", "verify", "-trace", record, "-jwks", jwks, "-max-age", "0"); code != 0 || !strings.HasSuffix(out, ": VALID\n") {
			t.Errorf("docket verify -trace %s = %d, %q, %q; want 0 VALID", filepath.Base(f), code, out, errs)
		}
		if code, out, _ := runDocket(t, "", "verify", "-trace", record, "-jwks", jwks); code != 1 || !strings.Contains(out, "invalid: stale") {
			t.Errorf("docket verify -trace %s with the default 24h age = %d, %q; want 1 stale", filepath.Base(f), code, out)
		}
		if code, out, _ := runDocket(t, "", "verify", "-trace", record, "-key", strings.Repeat("ab", 32), "-max-age", "0"); code != 2 || !strings.Contains(out, "untrusted_key") {
			t.Errorf("docket verify -trace %s -key OTHER = %d, %q; want 2 untrusted_key", filepath.Base(f), code, out)
		}
	}
}

// TestExportTraceWithoutLog: a project with no log exports a record with no
// appraisal and no transparency (and says why), which verifies with the
// issuer key, its transcript and chain.
func TestExportTraceWithoutLog(t *testing.T) {
	project := traceSession(t, "s2")
	code, out, errs := runDocket(t, "", "export", "trace", "-session", "s2", "-o", "rec", "-subject", "spiffe://example.org/agent", "-data-class", "internal")
	if code != 0 || !strings.Contains(out, "(1 call, appraisal none)") || !strings.Contains(errs, "has no log proof yet") {
		t.Fatalf("docket export trace = %d, %q, %q; want 0, appraisal none, a warning about the proof", code, out, errs)
	}
	var rec struct {
		Subject      string `json:"subject"`
		DataClass    string `json:"data_class"`
		Transparency string `json:"transparency"`
		Model        struct {
			ModelID string `json:"model_id"`
		} `json:"model"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join("rec", "trust-record.json")), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Subject != "spiffe://example.org/agent" || rec.DataClass != "internal" || rec.Transparency != "" || rec.Model.ModelID != "unknown" {
		t.Errorf("record = %+v", rec)
	}
	code, out, _ = runDocket(t, "", "verify", "-trace", "rec/trust-record.json", "-key-file", ".docket/issuer.key")
	if code != 0 || !strings.Contains(out, "receipts: valid") || !strings.Contains(out, "transparency: not checked") {
		t.Errorf("docket verify -trace = %d, %q; want 0 with receipts checked", code, out)
	}
	// Published over HTTP: -fetch reads the transcript and the chain next to it.
	srv := httptest.NewServer(http.StripPrefix("/s2/", http.FileServer(http.Dir(filepath.Join(project, "pub")))))
	defer srv.Close()
	if code, _, errs := runDocket(t, "", "export", "trace", "-session", "s2", "-o", "pub", "-transcript-uri", srv.URL+"/s2/transcript.json"); code != 0 {
		t.Fatalf("docket export trace -transcript-uri = %d, %s", code, errs)
	}
	if err := os.Rename(filepath.Join("pub", "trust-record.json"), "alone.json"); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runDocket(t, "", "verify", "-trace", "alone.json", "-key-file", ".docket/issuer.key", "-fetch")
	if code != 0 || !strings.Contains(out, "receipts: valid") {
		t.Errorf("docket verify -trace -fetch = %d, %q; want 0 with receipts checked", code, out)
	}
	os.Remove(filepath.Join("pub", "chain.jsonl"))
	code, out, errs = runDocket(t, "", "verify", "-trace", "alone.json", "-key-file", ".docket/issuer.key", "-fetch")
	if code != 2 || !strings.Contains(out, "receipts: undecidable: missing") || !strings.Contains(errs, "404 Not Found") {
		t.Errorf("docket verify -trace -fetch, no chain = %d, %q, %q; want 2, missing, the 404", code, out, errs)
	}

	// With a log key, a record that names no proof is not anchored.
	_, vkey, err := note.GenerateKey(rand.Reader, "log.example")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runDocket(t, "", "verify", "-trace", "rec/trust-record.json", "-key-file", ".docket/issuer.key", "-log-key", vkey)
	if code != 1 || !strings.Contains(out, "transparency: invalid: not_anchored") {
		t.Errorf("docket verify -trace -log-key = %d, %q; want 1 not_anchored", code, out)
	}
}
