package explorer

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIndexCommit measures the follower's writes alone: rows shaped
// as the benchmark log's (8 issuers, sessions of 50 entries, decisions and
// executions), committed chunk by chunk into a fresh index, as a cold
// catch-up writes them. Reported per entry.
func BenchmarkIndexCommit(b *testing.B) {
	n := benchN(b, "DOCKET_INDEX_BENCH_N", 100_000)
	rows := benchRows(n)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		b.StopTimer()
		x, err := openIndex(b.Context(), filepath.Join(b.TempDir(), "explorer.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for from := uint64(0); from < uint64(n); from += chunk {
			end := min(uint64(n), from+chunk)
			if err := x.commit(b.Context(), rows[from:end], &state{size: end, cp: []byte("checkpoint"), hashes: [][]byte{make([]byte, 32)}}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		x.db.Close()
		b.StartTimer()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
	b.ReportMetric(float64(cpu)/float64(b.N*n), "cpu-ns/entry")
}

func benchRows(n int) []*row {
	tools := []string{"Bash", "Read", "Write", "Edit", "WebFetch", "mcp__github__create_issue"}
	decisions := []string{"allow", "allow", "allow", "deny", "ask"}
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	rows := make([]*row, n)
	for i := range rows {
		h := func(s string) []byte { d := sha256.Sum256(fmt.Appendf(nil, "%s%d", s, i)); return d[:] }
		at := t0.Add(time.Duration(i) * 17 * time.Second)
		r := &row{Index: uint64(i), Leaf: h("leaf"), Hash: h("hash"), Issuer: fmt.Sprintf("kid-%d", i%8),
			Session: fmt.Sprintf("session-%d", i/400*8+i%8), Seq: int64(i / 8 % 50), ISeq: int64(i / 8),
			Tool: tools[i%len(tools)], Policies: "default-permit, bash-guard", At: at.UnixMilli(),
			Issued: at.Format(time.RFC3339Nano), Prev: h("prev"), Enforced: true, HW: int64(i / 8)}
		if i%2 == 0 {
			r.Kind, r.Event, r.Decision, r.Reason = kindDecision, "PreToolUse", decisions[i/2%len(decisions)], "policy"
		} else {
			r.Kind, r.Event, r.DecHash = kindExecution, "PostToolUse", h("hash")
		}
		rows[i] = r
	}
	return rows
}
