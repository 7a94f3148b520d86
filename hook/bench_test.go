package hook_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Whole-process benchmarks of `docket hook pre` with a 20-policy file
// (testdata/hook/bench20.cedar) on an allowed Bash call, against a bare Go
// process that reads stdin and writes one line. Each decision is signed and
// appended (fsync) to one session chain, which grows over the run.
//
//	go test -run '^$' -bench 'Process|PreVsBare' -benchtime 400x ./hook
//
// BenchmarkHookPreVsBare runs the two alternately, so that both see the same
// machine load, and reports each median and their ratio, with the median of
// `docket help` (which does nothing) as the floor of any docket command.

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
	for b.Loop() {
		runProcess(b, p.dir, ev, env, docketBin, "hook", "pre")
	}
}

func BenchmarkBareProcess(b *testing.B) {
	p, ev := benchProject(b)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)
	for b.Loop() {
		runProcess(b, p.dir, ev, env, bareBin)
	}
}

func BenchmarkHookPreVsBare(b *testing.B) {
	p, ev := benchProject(b)
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)
	var pre, bare, floor []time.Duration
	for b.Loop() {
		pre = append(pre, runProcess(b, p.dir, ev, env, docketBin, "hook", "pre"))
		bare = append(bare, runProcess(b, p.dir, ev, env, bareBin))
		floor = append(floor, runProcess(b, p.dir, ev, env, docketBin, "help"))
	}
	mp, mb := median(pre), median(bare)
	b.ReportMetric(float64(mp)/1e6, "pre-median-ms")
	b.ReportMetric(float64(mb)/1e6, "bare-median-ms")
	b.ReportMetric(float64(mp)/float64(mb), "ratio")
	// docket help does nothing: the cost of starting the docket binary.
	b.ReportMetric(float64(median(floor))/1e6, "docket-help-median-ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
