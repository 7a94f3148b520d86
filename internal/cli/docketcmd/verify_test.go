package docketcmd

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
)

func writeChain(t testing.TB, dir string, chain [][]byte) string {
	t.Helper()
	path := filepath.Join(dir, "chain.jsonl")
	if err := os.WriteFile(path, append(bytes.Join(chain, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyExitCodes(t *testing.T) {
	dir := t.TempDir()
	key, kf := receipts.GenerateKey()
	chain, err := testChain(key)
	if err != nil {
		t.Fatal(err)
	}
	good := writeChain(t, dir, chain)
	tamperedChain := append([][]byte{}, chain...)
	tamperedChain[1] = bytes.Replace(chain[1], []byte("Bash"), []byte("Bosh"), 1)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, bytes.Join(tamperedChain, []byte("\n")), 0o644)
	single := filepath.Join(dir, "one.json")
	os.WriteFile(single, chain[0], 0o644)
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, bytes.Join(chain[:3], []byte("\n")), 0o644)
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{not json"), 0o644)
	pub, _ := receipts.ParsePublicKeyHex(kf.PublicKey)
	keys := receipts.PinnedKey(pub)

	tests := []struct {
		name     string
		files    []string
		keys     *receipts.KeySet
		want     int
		contains string
	}{
		{"valid chain", []string{good}, keys, 0, "valid: 5 receipts"},
		{"valid single", []string{single}, keys, 0, "valid: 1 receipt,"},
		{"open session", []string{open}, keys, 0, "valid: 3 receipts, 3 valid, 0 invalid, 0 undecidable, open: no session_end"},
		{"tampered chain", []string{bad}, keys, 1, "receipt 2: invalid: bad_signature"},
		{"no key", []string{good}, nil, 2, "no_trusted_key"},
		{"malformed", []string{garbage}, keys, 2, "malformed"},
		{"missing file", []string{filepath.Join(dir, "nope.json")}, keys, 2, "undecidable"},
		{"invalid beats undecidable", []string{garbage, bad, good}, keys, 1, "INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var files []fileResult
			for _, f := range tt.files {
				files = append(files, verifyFile(f, receipts.Options{Keys: tt.keys}))
			}
			var out bytes.Buffer
			if got := report(&out, files, false, false); got != tt.want || !strings.Contains(out.String(), tt.contains) {
				t.Errorf("verify %v = exit %d, output\n%s\nwant exit %d and %q", tt.files, got, out.String(), tt.want, tt.contains)
			}
			if len(files) != len(tt.files) {
				t.Errorf("checked %d files, want %d", len(files), len(tt.files))
			}
		})
	}

	// -json gives one result per receipt; -strict refuses legacy links.
	var out bytes.Buffer
	report(&out, []fileResult{verifyFile(good, receipts.Options{Keys: keys})}, true, false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(chain) {
		t.Fatalf("-json printed %d lines, want %d", len(lines), len(chain))
	}
	var first jsonResult
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Index != 1 || first.Hash != receipts.ChainHash(chain[0]) {
		t.Errorf("-json line 1 = %s (%v), want index 1 and the chain hash", lines[0], err)
	}
	legacy := []fileResult{verifyFile("../../../testdata/vectors/agtv-nobulex-v1flat/receipt-0001.json", receipts.Options{Keys: keys})}
	legacy[0].results = receipts.VerifyChain([][]byte{mustRead(t, "../../../testdata/vectors/agtv-nobulex-v1flat/receipt-0001.json"), mustRead(t, "../../../testdata/vectors/agtv-nobulex-v1flat/receipt-0002.json")},
		receipts.Options{Keys: receipts.PinnedKey(conformancePub(t))})
	if got := report(io.Discard, legacy, false, false); got != 0 {
		t.Errorf("legacy chain = exit %d, want 0", got)
	}
	if got := report(io.Discard, legacy, false, true); got != 1 {
		t.Errorf("legacy chain with -strict = exit %d, want 1", got)
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func conformancePub(t testing.TB) ed25519.PublicKey {
	k, _ := hex.DecodeString("4cb5abf6ad79fbf5abbccafcc269d85cd2651ed4b885b5869f241aedf0a5ba29")
	return k
}

// testChain signs the receipts of a short session: start, an allowed Bash
// call and its execution, a denied call, end.
func testChain(priv ed25519.PrivateKey) ([][]byte, error) {
	inputHash := func(v any) string { h, _ := receipts.HashJSON(v); return h }
	steps := []receipts.Payload{
		{Type: receipts.TypeLifecycle, HookEvent: "SessionStart", LifecycleEvent: "session_start"},
		{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: inputHash(map[string]any{"command": "git status"}),
			Decision: receipts.Allow, Reason: "cedar_allow", PolicyIDs: []string{"allow-git-read"}},
		{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Bash", Decision: receipts.Allow},
		{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: inputHash(map[string]any{"command": "rm -rf /"}),
			Decision: receipts.Deny, Reason: "cedar_deny", PolicyIDs: []string{"forbid-rm"}},
		{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end"},
	}
	var chain [][]byte
	prev := ""
	for i, p := range steps {
		p.SessionID, p.Agent, p.Sequence, p.PreviousReceiptHash = "test-session", "claude-code", int64(i+1), prev
		if p.HookEvent == "PostToolUse" {
			p.DecisionReceiptHash = prev
		}
		r, err := receipts.Sign(priv, p)
		if err != nil {
			return nil, err
		}
		chain, prev = append(chain, r), receipts.ChainHash(r)
	}
	return chain, nil
}

// BenchmarkVerifyChainFile measures what `docket verify` does with a
// 100,000-receipt chain file (read, parse, JCS, Ed25519 on every core, link
// checks) against the machine's raw Ed25519 verification rate on the same
// cores, measured in the same run. The ratio is reported as raw_pct.
func BenchmarkVerifyChainFile(b *testing.B) {
	const n = 100_000
	key, _ := receipts.GenerateKey()
	chain := make([][]byte, 0, n)
	prev := ""
	for i := range n {
		r, err := receipts.Sign(key, receipts.Payload{
			Type: receipts.TypeDecision, SessionID: "bench", Sequence: int64(i + 1), PreviousReceiptHash: prev,
			HookEvent: "PreToolUse", Agent: "claude-code", ToolName: "Bash", Decision: receipts.Allow, Reason: "cedar_allow",
			ToolInputHash: "sha256:" + strings.Repeat("ab", 32), PolicyDigest: "sha256:" + strings.Repeat("cd", 32),
			PolicyIDs: []string{"allow-git"}, IssuedAt: receipts.FormatTime(time.Unix(1_790_000_000+int64(i), 0)),
		})
		if err != nil {
			b.Fatal(err)
		}
		chain, prev = append(chain, r), receipts.ChainHash(r)
	}
	path := writeChain(b, b.TempDir(), chain)
	opts := receipts.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey))}

	// Raw rate: the same number of Ed25519 verifications of receipt-sized
	// messages spread over GOMAXPROCS goroutines, timed in every iteration
	// right before the file is verified, so both see the same machine load.
	msg := chain[0][:len(chain[0])-170]
	sig := ed25519.Sign(key, msg)
	pub := key.Public().(ed25519.PublicKey)
	var raw, verify time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		workers := runtime.GOMAXPROCS(0)
		for w := range workers {
			wg.Go(func() {
				for i := w; i < n; i += workers {
					if !ed25519.Verify(pub, msg, sig) {
						panic("raw verify failed")
					}
				}
			})
		}
		wg.Wait()
		raw += time.Since(start)
		start = time.Now()
		if code := report(io.Discard, []fileResult{verifyFile(path, opts)}, false, false); code != 0 {
			b.Fatalf("verify exit %d", code)
		}
		verify += time.Since(start)
	}
	b.ReportMetric(float64(n*b.N)/verify.Seconds(), "receipts/s")
	b.ReportMetric(float64(n*b.N)/raw.Seconds(), "raw_verifies/s")
	b.ReportMetric(100*raw.Seconds()/verify.Seconds(), "raw_pct")
}
