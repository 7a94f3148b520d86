package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyTraceVectors: docket verify -trace accepts the four records of
// trace-spec's canonicalization-boundary set (signed over RFC 8785 bytes),
// with their trusted key as a JWKS and no age limit (they are fixed in
// time), and rejects them under another key.
func TestVerifyTraceVectors(t *testing.T) {
	files, err := filepath.Glob("../../testdata/vectors/trace-canonicalization/*.json")
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
