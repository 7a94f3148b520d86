package reconcile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// writeClaudeSession writes a Claude Code transcript of n Bash calls, each
// with its result, in Claude Code's shape, and returns its path.
func writeClaudeSession(b *testing.B, dir string, n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, `{"type":"assistant","sessionId":"bench","cwd":"/p","uuid":"a%d","message":{"id":"msg_%d","role":"assistant","content":[{"type":"tool_use","id":"toolu_%05d","name":"Bash","input":{"command":"go test ./pkg%d/...","description":"run the tests"}}]}}`+"\n", i, i, i, i)
		fmt.Fprintf(&sb, `{"type":"user","sessionId":"bench","cwd":"/p","uuid":"u%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%05d","content":"ok  \tgithub.com/x/pkg%d\t0.01s","is_error":false}]}}`+"\n", i, i, i)
	}
	path := filepath.Join(dir, "bench.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReconcile1000 is the cost of reconciling a 1,000-call Claude
// Code session at its end (a benchmark of Session.Reconcile on real files,
// not of the hook command): read the transcript (~0.4 MB), read and open
// the chain, match.
//
//   - decided: every call has its decision and execution in the chain
//     (2,000 receipts); nothing is signed.
//   - ungated: the chain is empty; 1,000 unmediated_call receipts are
//     signed and appended (fsynced) — the worst case, a session whose hooks
//     never ran.
func BenchmarkReconcile1000(b *testing.B) {
	const n = 1000
	newSession := func(b *testing.B) Session {
		st := store.Open(b.TempDir())
		priv, kf := receipts.GenerateKey()
		if err := st.WriteKey(kf); err != nil {
			b.Fatal(err)
		}
		return Session{Store: st, Key: priv, ID: "bench", Agent: Claude}
	}
	path := writeClaudeSession(b, b.TempDir(), n)
	rec, err := ReadClaude(b.Context(), path)
	if err != nil || len(rec.Calls) != n {
		b.Fatalf("ReadClaude = %d calls, %v", len(rec.Calls), err)
	}

	decided := newSession(b)
	{
		s := decided
		for _, c := range rec.Calls {
			for _, ev := range []string{receipts.PreToolUse, receipts.PostToolUse} {
				_, err := s.Store.Append(s.ID, store.AppendOptions{}, func(l store.Link) ([]byte, error) {
					return receipts.Sign(s.Key, receipts.Payload{Type: receipts.TypeDecision, SessionID: s.ID, Sequence: l.Sequence,
						PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence, HookEvent: ev, Agent: Claude,
						ToolName: c.Tool, ToolUseID: c.ID, ToolInputHash: c.InputHash, Decision: receipts.Allow})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("decided", func(b *testing.B) {
		s := decided
		defer cpuPerOp(b)()
		for b.Loop() {
			rec, err := ReadClaude(b.Context(), path)
			if err != nil {
				b.Fatal(err)
			}
			missing, err := s.Reconcile(rec)
			if err != nil || len(missing) != 0 {
				b.Fatalf("Reconcile = %d missing, %v", len(missing), err)
			}
		}
	})
	b.Run("ungated", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			b.StopTimer()
			s := newSession(b)
			b.StartTimer()
			rec, err := ReadClaude(b.Context(), path)
			if err != nil {
				b.Fatal(err)
			}
			missing, err := s.Reconcile(rec)
			if err != nil || len(missing) != n {
				b.Fatalf("Reconcile = %d missing, %v", len(missing), err)
			}
		}
	})
}

// cpuPerOp reports the process's CPU time (user and system) per operation
// as cpu-ms/op: wall time on a loaded machine says more about the load.
func cpuPerOp(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64((cpu()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}
