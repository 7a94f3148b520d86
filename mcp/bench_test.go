package mcp_test

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
)

var (
	benchDocket = flag.String("mcp.docket", "", "comma-separated docket binaries whose `docket mcp` BenchmarkToolsCall/interleaved also measures")
	benchServer = flag.String("mcp.server", "test", "the MCP server BenchmarkToolsCall/interleaved calls: test (this binary) or everything (@modelcontextprotocol/server-everything from $DOCKET_MCP_NODE_MODULES)")
	benchDisk   = flag.Bool("mcp.disk", false, "BenchmarkToolsCall/interleaved keeps the store on the test's temporary directory (a disk: every decision is fdatasynced there) instead of tmpfs")
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

// BenchmarkToolsCallInterleaved measures the relay's added latency: one
// tools/call round trip to the same MCP server directly, through the
// relay (mcp.Run in this process), and through each `docket mcp` binary
// named by -mcp.docket (the command as users run it), alternated call by
// call in rotating order, so that all see the same machine. It reports
// each target's p50 and p99 and the p50 and p99 of what it adds to the
// direct call of the same round.
//
//	go test -run '^$' -bench ToolsCallInterleaved -benchtime 3000x ./mcp [-args -mcp.docket OLD,NEW -mcp.server everything -mcp.disk]
func BenchmarkToolsCallInterleaved(b *testing.B) {
	var argv []string
	var args map[string]any
	switch *benchServer {
	case "test":
		argv, args = serverCommand(), map[string]any{"message": "hello", "n": 42}
	case "everything":
		nm := os.Getenv("DOCKET_MCP_NODE_MODULES")
		if nm == "" {
			b.Skip("DOCKET_MCP_NODE_MODULES is unset: run . .ci/deps/mcp.sh")
		}
		argv, args = []string{"node", filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}, map[string]any{"message": "hello"}
	default:
		b.Fatalf("-mcp.server %q: want test or everything", *benchServer)
	}
	dir := b.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && !*benchDisk {
		tmp, err := os.MkdirTemp("/dev/shm", "docket-mcp-bench")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	g := newGateAt(b, dir)

	type target struct {
		name     string
		in       io.WriteCloser
		out      *bufio.Scanner
		lat, add []time.Duration
		cmd      *exec.Cmd // a docket mcp process
	}
	pipe := func(name string, cmd *exec.Cmd) *target {
		in, _ := cmd.StdinPipe()
		outR, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { in.Close(); cmd.Wait() })
		out := bufio.NewScanner(outR)
		out.Buffer(make([]byte, 1<<20), 1<<20)
		return &target{name: name, in: in, out: out, cmd: cmd}
	}
	targets := []*target{pipe("direct", exec.Command(argv[0], argv[1:]...))}
	s := start(b, g, func(c *mcp.Config) { c.Command = argv })
	defer s.close()
	targets = append(targets, &target{name: "relay", in: s.in, out: s.out})
	if *benchDocket != "" {
		for i, bin := range strings.Split(*benchDocket, ",") {
			cmd := exec.Command(bin, append([]string{"mcp", "-dir", dir, "-name", "t", "-session", fmt.Sprintf("docket%d", i), "--"}, argv...)...)
			targets = append(targets, pipe(fmt.Sprintf("docket%d", i), cmd))
			b.Logf("docket%d is %s", i, bin)
		}
	}
	round := make([]time.Duration, len(targets))
	callOnce := func(t *target, id int) time.Duration {
		line := []byte(call(id, "echo", args) + "\n")
		t0 := time.Now()
		if _, err := t.in.Write(line); err != nil {
			b.Fatalf("%s: %v", t.name, err)
		}
		if !t.out.Scan() {
			b.Fatalf("%s: no answer: %v", t.name, t.out.Err())
		}
		d := time.Since(t0)
		if !strings.Contains(t.out.Text(), "hello") {
			b.Fatalf("%s answered %s", t.name, t.out.Text())
		}
		return d
	}
	// A first call each: the relay lists the server's tools on it.
	for _, t := range targets {
		callOnce(t, 0)
	}
	b.ResetTimer()
	for i := 1; b.Loop(); i++ {
		for k := range targets {
			j := (k + i) % len(targets)
			round[j] = callOnce(targets[j], i)
		}
		for j, t := range targets {
			t.lat = append(t.lat, round[j])
			t.add = append(t.add, round[j]-round[0])
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[len(d)*p/100].Microseconds())
	}
	for j, t := range targets {
		if j > 1 {
			// The CPU time of the docket mcp process and of the
			// server it waited for (start and session end included),
			// per call.
			t.in.Close()
			t.cmd.Wait()
			cpu := t.cmd.ProcessState.UserTime() + t.cmd.ProcessState.SystemTime()
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(t.lat)), t.name+"-cpu-µs/call")
		}
		b.ReportMetric(pct(t.lat, 50), t.name+"-p50-µs")
		b.ReportMetric(pct(t.lat, 99), t.name+"-p99-µs")
		if j > 0 {
			b.ReportMetric(pct(t.add, 50), t.name+"-added-p50-µs")
			b.ReportMetric(pct(t.add, 99), t.name+"-added-p99-µs")
		}
	}
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
