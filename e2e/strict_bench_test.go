package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkStrictPre measures what the strict mode (docket init
// -require-log) adds to the pre hook: the whole `docket hook pre` process
// for an allowed call, against a local docket-log with a 2-of-3 witness
// quorum, with and without -require-log. It reports p50 and p99.
//
//	go test -run '^$' -bench StrictPre -benchtime 200x ./e2e
func BenchmarkStrictPre(b *testing.B) {
	dir := b.TempDir()
	// The latency of the shipped binaries, not of the test binary that
	// answers as them in the scenarios: build them, here only.
	binDir := b.TempDir()
	build := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "../cmd/docket", "../cmd/docket-log", "../cmd/docket-witness")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building the binaries: %v\n%s", err, out)
	}
	bin := func(name string) string { return filepath.Join(binDir, name) }
	run := func(args ...string) string {
		b.Helper()
		out, err := exec.Command(bin(args[0]), args[1:]...).CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("docket", "keygen", "-log", "log.bench/docket", "-o", filepath.Join(dir, "log.key"))
	ports := make([]int, 4)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = p
	}
	logVKey, _ := os.ReadFile(filepath.Join(dir, "log.key.pub"))
	policy := fmt.Sprintf("log %s http://127.0.0.1:%d\n", strings.TrimSpace(string(logVKey)), ports[0])
	for i := 1; i <= 3; i++ {
		key := filepath.Join(dir, fmt.Sprintf("w%d.key", i))
		run("docket", "keygen", "-witness", fmt.Sprintf("w%d.bench", i), "-o", key)
		vkey, _ := os.ReadFile(key + ".pub")
		policy += fmt.Sprintf("witness w%d %s http://127.0.0.1:%d\n", i, strings.TrimSpace(string(vkey)), ports[i])
	}
	policy += "group g 2 w1 w2 w3\nquorum g\n"
	policyPath := filepath.Join(dir, "witnesses.policy")
	os.WriteFile(policyPath, []byte(policy), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	start := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, bin(name), args...)
		cmd.Dir = dir
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cancel(); cmd.Wait() })
	}
	for i := 1; i <= 3; i++ {
		start("docket-witness", "-listen", fmt.Sprintf("127.0.0.1:%d", ports[i]), "-key", fmt.Sprintf("w%d.key", i),
			"-db", fmt.Sprintf("w%d.db", i), "-logs", "witnesses.policy")
		if err := waitHTTP(fmt.Sprintf("http://127.0.0.1:%d/health", ports[i])); err != nil {
			b.Fatal(err)
		}
	}
	start("docket-log", "-listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "-key", "log.key", "-storage-dir", "logdata",
		"-witness-policy", "witnesses.policy")
	if err := waitHTTP(fmt.Sprintf("http://127.0.0.1:%d/checkpoint", ports[0])); err != nil {
		b.Fatal(err)
	}

	for _, mode := range []string{"normal", "strict"} {
		project := filepath.Join(dir, mode)
		os.MkdirAll(project, 0o755)
		args := []string{"init", "-log", fmt.Sprintf("http://127.0.0.1:%d", ports[0]), "-log-key", strings.TrimSpace(string(logVKey)), "-witness-policy", policyPath}
		if mode == "strict" {
			args = append(args, "-require-log")
		}
		cmd := exec.Command(bin("docket"), args...)
		cmd.Dir = project
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("init: %v %s", err, out)
		}
		b.Run(mode, func(b *testing.B) {
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				ev := fmt.Sprintf(`{"session_id":"bench","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git log -n %d"},"tool_use_id":"t%d"}`, i, i)
				cmd := exec.Command(bin("docket"), "hook", "pre")
				cmd.Dir = project
				cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+project, "DOCKET_AUTOSYNC=0", "HOME="+dir)
				cmd.Stdin = strings.NewReader(ev)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatalf("hook pre: %v %s", err, stderr.String())
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// waitHTTP waits until url answers 200, for at most 30 seconds.
func waitHTTP(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not come up", url)
}
