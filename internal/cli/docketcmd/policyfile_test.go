package docketcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyWitnessPolicyIsRefused: every reader of the log sets its
// verifier up with c2sp.LoadProofVerifier, so an empty -witness-policy file
// (a truncated one) is refused everywhere instead of silently meaning "no
// quorum".
func TestEmptyWitnessPolicyIsRefused(t *testing.T) {
	l, vkey := readerLog(t)
	empty := filepath.Join(t.TempDir(), "w.policy")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chain := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(chain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"verify", []string{"verify", "-log-key", vkey, "-witness-policy", empty, chain}},
		{"audit", []string{"audit", "-log", l.Dir, "-log-key", vkey, "-witness-policy", empty}},
		{"monitor", []string{"monitor", "-once", "-log", l.Dir, "-log-key", vkey, "-witness-policy", empty, "-state", t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runDocket(t, "", tt.args...)
			if code != 2 || !strings.Contains(errs, "unusable witness policy") || !strings.Contains(errs, "is empty") {
				t.Errorf("docket %s with an empty policy file = %d, want 2 and the file refused:\n%s%s", tt.name, code, out, errs)
			}
		})
	}
}
