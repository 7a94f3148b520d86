package mcp_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
)

// reportLatency reports the p50 and p99 of lat in microseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// roundTrips makes b.N sequential echo tools/call round trips over in/out.
func roundTrips(b *testing.B, in io.Writer, out *bufio.Scanner) {
	// Each call has its own id: a client does not reuse the id of a call
	// whose response it has just read (the relay may not have retired it).
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		line := []byte(call(i, "echo", map[string]any{"message": "hello", "n": 42}) + "\n")
		t0 := time.Now()
		if _, err := in.Write(line); err != nil {
			b.Fatal(err)
		}
		if !out.Scan() {
			b.Fatalf("no answer: %v", out.Err())
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkToolsCall measures one tools/call round trip to the test server
// directly and through the relay. The relay's store is on tmpfs
// (/dev/shm) when there is one, so that the difference is the relay's own
// work (parse, policy, sign, append) without the decision's fsync, which
// BenchmarkDecideFsync measures on the disk.
func BenchmarkToolsCall(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		argv := serverCommand()
		cmd := exec.Command(argv[0], argv[1:]...)
		in, _ := cmd.StdinPipe()
		outR, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { in.Close(); cmd.Wait() }()
		out := bufio.NewScanner(outR)
		out.Buffer(make([]byte, 1<<20), 1<<20)
		roundTrips(b, in, out)
	})
	b.Run("relay", func(b *testing.B) {
		dir := ""
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			dir = "/dev/shm"
		}
		tmp, err := os.MkdirTemp(dir, "docket-mcp-bench")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		g := newGateAt(b, tmp)
		s := start(b, g, nil)
		roundTrips(b, s.in, s.out)
		s.close()
	})
}

// BenchmarkDecideFsync measures gate.Decide for an MCP call with the store
// on the test's temporary directory (a real disk): the decision's fsync
// dominates it.
func BenchmarkDecideFsync(b *testing.B) {
	benchDecide(b, newGate(b))
}

// BenchmarkDecideTmpfs is BenchmarkDecideFsync with the store on tmpfs:
// the gate's work without a disk's fsync.
func BenchmarkDecideTmpfs(b *testing.B) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		b.Skip("no /dev/shm")
	}
	tmp, err := os.MkdirTemp("/dev/shm", "docket-mcp-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	benchDecide(b, newGateAt(b, tmp))
}

func benchDecide(b *testing.B, g *gate.Gate) {
	c := gate.Call{SessionID: "s", Agent: "mcp", ToolName: "mcp__t__echo", ToolInputHash: "sha256:x",
		Requests: []policy.Call{{Agent: "mcp", ToolName: "mcp__t__echo", ToolInput: []byte(`{"message":"hello"}`),
			Cwd: g.Store().Project(), MCP: &policy.MCPContext{}}}}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if d, err := g.Decide(b.Context(), c); err != nil || d.Decision.Decision != policy.Allow {
			b.Fatalf("Decide = %+v, %v", d.Decision, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}
