package hook_test

import (
	"bytes"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/hookd"
)

// Whole-process benchmarks of `docket hook pre` with a 20-policy file
// (testdata/hook/bench20.cedar) on an allowed Bash call, against a bare Go
// process that reads stdin and writes one line. Each decision is signed and
// appended (fsync) to one session chain, which grows over the run.
//
//	go test -run '^$' -bench 'Process|PreVsBare' -benchtime 400x ./hook
//
// BenchmarkHookPreVsBare runs them in turn, so that all see the same
// machine load, and reports the medians of:
//   - pre: docket as `go build` makes it (linked with libc where cgo is
//     available, because net uses it);
//   - pre-static: docket built with CGO_ENABLED=0, as the README installs it;
//   - bare, and the ratio of each pre to it;
//   - bare-durable: bare that also appends its input to a file with flock
//     and fdatasync, the least any hook that keeps a durable record costs;
//   - docket-help: the static docket doing nothing, the least any docket
//     command costs.

// build builds the package pkg (with extra environment variables) into
// b's temporary directory and returns the binary: the benchmarks time the
// shipped docket, not the test binary that answers as docket in the tests.
func build(b *testing.B, pkg string, env ...string) string {
	out := filepath.Join(b.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// The packages the benchmarks build: docket, and bare, the baseline (a Go
// process that reads stdin and writes one line).
const (
	docketPkg = "github.com/docketlog/docket/cmd/docket"
	barePkg   = "../testdata/hook/bare"
)

func benchProject(b *testing.B) (*project, []byte) {
	p := newProject(b, filepath.Join("..", "testdata", "hook", "bench20.cedar"))
	return p, p.fixture(b, "claude/pre-bash.json", map[string]any{"session_id": "bench", "tool_input.command": "git status"})
}

// runProcess runs one process to completion and returns its wall time.
func runProcess(b *testing.B, dir string, stdin []byte, env []string, bin string, args ...string) time.Duration {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v (%s)", bin, args, err, out)
	}
	return d
}

func BenchmarkHookPreProcess(b *testing.B) {
	p, ev := benchProject(b)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)
	docketBin := build(b, docketPkg)
	for b.Loop() {
		runProcess(b, p.dir, ev, env, docketBin, "hook", "pre")
	}
}

func BenchmarkBareProcess(b *testing.B) {
	p, ev := benchProject(b)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)
	bareBin := build(b, barePkg)
	for b.Loop() {
		runProcess(b, p.dir, ev, env, bareBin)
	}
}

func BenchmarkHookPreVsBare(b *testing.B) {
	p, ev := benchProject(b)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)
	docketBin, bareBin := build(b, docketPkg), build(b, barePkg)
	static := build(b, docketPkg, "CGO_ENABLED=0")
	durable := filepath.Join(p.dir, "bare-durable.log")
	var pre, preStatic, bare, bareDurable, help []time.Duration
	for b.Loop() {
		pre = append(pre, runProcess(b, p.dir, ev, env, docketBin, "hook", "pre"))
		preStatic = append(preStatic, runProcess(b, p.dir, ev, env, static, "hook", "pre"))
		bare = append(bare, runProcess(b, p.dir, ev, env, bareBin))
		bareDurable = append(bareDurable, runProcess(b, p.dir, ev, env, bareBin, durable))
		help = append(help, runProcess(b, p.dir, ev, env, static, "help"))
	}
	ms := func(ds []time.Duration) float64 { return float64(median(ds)) / 1e6 }
	b.ReportMetric(ms(pre), "pre-ms")
	b.ReportMetric(ms(preStatic), "pre-static-ms")
	b.ReportMetric(ms(bare), "bare-ms")
	b.ReportMetric(ms(pre)/ms(bare), "pre/bare")
	b.ReportMetric(ms(preStatic)/ms(bare), "pre-static/bare")
	b.ReportMetric(ms(bareDurable), "bare-durable-ms")
	b.ReportMetric(ms(help), "docket-help-ms")
}

var hookOld = flag.String("hook.old", "", "BenchmarkHookPreVsOld: an earlier static docket binary to alternate with this tree's")

// BenchmarkHookPreVsOld times the static docket of this tree against an
// earlier static docket binary (-hook.old) and the bare process, whole
// processes, alternated (the order of the two dockets swapped every other
// round) on one project, so that all see the same machine load: `docket
// hook pre` for an allowed `ls src` under the 20-policy file. It reports
// the medians and 99th percentiles of each, the median of the pairwise
// ratios new/old, and each docket's median and p99 over bare's. This tree's
// docket decides the first call in-process and starts the project's gate
// daemon, which decides the others, as for a user:
//
//	go test -run '^$' -bench HookPreVsOld -benchtime 300x ./hook -args -hook.old=/path/to/earlier/docket
func BenchmarkHookPreVsOld(b *testing.B) { hookVsOld(b, "pre") }

// BenchmarkHookPostVsOld is BenchmarkHookPreVsOld for `docket hook post`:
// each round is a call of its own, whose pre hooks (untimed) decide it
// before the post hooks, timed, receipt its execution. This tree's docket
// forwards both to its gate daemon. Every agent call pays a pre and a post
// hook.
//
//	go test -run '^$' -bench HookPostVsOld -benchtime 300x ./hook -args -hook.old=/path/to/earlier/docket
func BenchmarkHookPostVsOld(b *testing.B) { hookVsOld(b, "post") }

// hookVsOld alternates `docket hook KIND` of this tree and of -hook.old
// with the bare process (BenchmarkHookPreVsOld).
func hookVsOld(b *testing.B, kind string) {
	if *hookOld == "" {
		b.Skip("give -hook.old=BINARY, an earlier docket built with CGO_ENABLED=0")
	}
	// Each docket has a project of its own: two dockets with gate daemons
	// in one project would make each other's daemon give way at every
	// call.
	p, pOld := newProject(b, filepath.Join("..", "testdata", "hook", "bench20.cedar")), newProject(b, filepath.Join("..", "testdata", "hook", "bench20.cedar"))
	call := map[string]any{"session_id": "bench", "tool_input.command": "ls src"}
	ev, evOld := p.fixture(b, "claude/pre-bash.json", call), pOld.fixture(b, "claude/pre-bash.json", call)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home, "DOCKET_AUTOSYNC=0")
	envOld := append(os.Environ(), "CLAUDE_PROJECT_DIR="+pOld.dir, "HOME="+pOld.home, "DOCKET_AUTOSYNC=0")
	cur, bareBin := build(b, docketPkg, "CGO_ENABLED=0"), build(b, barePkg)
	// The first call of this tree's docket starts the project's gate
	// daemon (docket hookd), as it does for a user (and so may an earlier
	// docket's); stop them at the end.
	b.Cleanup(func() { hookd.Stop(p.dir); hookd.Stop(pOld.dir) })
	runProcess(b, p.dir, ev, env, cur, "hook", "pre") // starts the daemon
	var news, olds, bares []time.Duration
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		if kind == "post" {
			// Each call of its own, decided (untimed) before its post
			// hook, as an agent runs them.
			call["tool_use_id"] = "toolu_bench_" + strconv.Itoa(i)
			pre, preOld := p.fixture(b, "claude/pre-bash.json", call), pOld.fixture(b, "claude/pre-bash.json", call)
			runProcess(b, p.dir, pre, env, cur, "hook", "pre")
			runProcess(b, pOld.dir, preOld, envOld, *hookOld, "hook", "pre")
			ev, evOld = p.fixture(b, "claude/post-bash.json", call), pOld.fixture(b, "claude/post-bash.json", call)
		}
		var n, o time.Duration
		if i%2 == 0 {
			n = runProcess(b, p.dir, ev, env, cur, "hook", kind)
			o = runProcess(b, pOld.dir, evOld, envOld, *hookOld, "hook", kind)
		} else {
			o = runProcess(b, pOld.dir, evOld, envOld, *hookOld, "hook", kind)
			n = runProcess(b, p.dir, ev, env, cur, "hook", kind)
		}
		bares = append(bares, runProcess(b, p.dir, ev, env, bareBin))
		news, olds = append(news, n), append(olds, o)
		ratios = append(ratios, float64(n)/float64(o))
	}
	slices.Sort(ratios)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	b.ReportMetric(ms(median(news)), "new-ms")
	b.ReportMetric(ms(median(olds)), "old-ms")
	b.ReportMetric(ms(median(bares)), "bare-ms")
	b.ReportMetric(ms(quantile(news, 0.99)), "new-p99-ms")
	b.ReportMetric(ms(quantile(olds, 0.99)), "old-p99-ms")
	b.ReportMetric(ms(quantile(bares, 0.99)), "bare-p99-ms")
	b.ReportMetric(ratios[len(ratios)/2], "new/old")
	b.ReportMetric(ms(median(news))/ms(median(bares)), "new/bare")
	b.ReportMetric(ms(median(olds))/ms(median(bares)), "old/bare")
}

// BenchmarkHookPreFloor splits the forwarded `docket hook pre` (this tree,
// static) into what no change inside docket's code removes and the rest,
// alternating, on the allowed `ls src` call of BenchmarkHookPreVsOld:
//   - bare: the bare Go process;
//   - client: docket hook pre against a socket that answers "exit 0" at
//     once (an in-test listener standing in for the daemon): exec and the Go
//     runtime's start on the docket binary, the packages before
//     internal/hookd/fast, and the hand-over;
//   - daemon: docket hook pre decided by the project's gate daemon;
//   - inprocess: DOCKET_HOOKD=0, the hook deciding in its own process.
//
// It reports each median and p99 and each median over bare's:
//
//	go test -run '^$' -bench HookPreFloor -benchtime 300x ./hook
func BenchmarkHookPreFloor(b *testing.B) {
	p := newProject(b, filepath.Join("..", "testdata", "hook", "bench20.cedar"))
	ev := p.fixture(b, "claude/pre-bash.json", map[string]any{"session_id": "bench", "tool_input.command": "ls src"})
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home, "DOCKET_AUTOSYNC=0")
	cur, bareBin := build(b, docketPkg, "CGO_ENABLED=0"), build(b, barePkg)
	b.Cleanup(func() { hookd.Stop(p.dir) })
	// The stand-in daemon's project: a short path, for the socket.
	fake, err := os.MkdirTemp("", "hd")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(fake) })
	if err := os.MkdirAll(filepath.Join(fake, ".docket"), 0o700); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(fake, ".docket", "hookd.sock"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				head := make([]byte, 8)
				if _, err := io.ReadFull(c, head); err != nil {
					return
				}
				n := int(head[4])<<24 | int(head[5])<<16 | int(head[6])<<8 | int(head[7])
				if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
					return
				}
				_, _ = c.Write([]byte{'X', 0})
			}()
		}
	}()
	fakeEnv := append(append([]string{}, env...), "CLAUDE_PROJECT_DIR="+fake)
	offEnv := append(append([]string{}, env...), "DOCKET_HOOKD=0")
	names := []string{"bare", "client", "daemon", "inprocess"}
	runs := []func() time.Duration{
		func() time.Duration { return runProcess(b, p.dir, ev, env, bareBin) },
		func() time.Duration { return runProcess(b, fake, ev, fakeEnv, cur, "hook", "pre") },
		func() time.Duration { return runProcess(b, p.dir, ev, env, cur, "hook", "pre") },
		func() time.Duration { return runProcess(b, p.dir, ev, offEnv, cur, "hook", "pre") },
	}
	runs[2]() // starts the daemon
	times := make([][]time.Duration, len(runs))
	for i := 0; b.Loop(); i++ {
		for j := range runs {
			k := (i + j) % len(runs)
			times[k] = append(times[k], runs[k]())
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for k, name := range names {
		b.ReportMetric(ms(median(times[k])), name+"-ms")
		b.ReportMetric(ms(quantile(times[k], 0.99)), name+"-p99-ms")
		if k > 0 {
			b.ReportMetric(ms(median(times[k]))/ms(median(times[0])), name+"/bare")
		}
	}
}

// quantile returns the q-quantile (0 ≤ q ≤ 1) of ds, nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
