package e2e

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/store"
)

var followN = flag.Int("follow.n", 10, "TestMCPFollow: tools/calls in the session")

// TestMCPFollow runs a docket mcp session against a real docket-log
// publishing a checkpoint at most every second (-checkpoint-interval 1s),
// keeps the client's stdin open, and makes tools/calls through docket
// demo-mcp-server one at a time: each call's decision and execution
// receipts must get their proofs stored while the session still runs
// (docket mcp -sync-every 1s), and once the client leaves, every receipt of
// the session, the session_end included, has its proof. It logs the time
// from sending each tools/call to both its proofs being stored, p50 and p99:
//
//	go test -run TestMCPFollow -v ./e2e -args -follow.n 100
func TestMCPFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("a session against a real log: seconds per call")
	}
	dir := t.TempDir()
	project, notes, home := filepath.Join(dir, "project"), filepath.Join(dir, "notes"), filepath.Join(dir, "home")
	for _, d := range []string{project, notes, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+home, "CLAUDE_PROJECT_DIR="+project, "DOCKET_AUTOSYNC=0")
	run := func(wd string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = wd, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	logURL, vkey := startLog(t, dir, env, "1s")
	run(project, "docket", "init", "-log", logURL, "-log-key", vkey,
		"-command", "docket", "-mcp", "notes", "-mcp-config", filepath.Join(dir, "mcp.json"), "--", "docket", "demo-mcp-server", notes)

	const session = "follow"
	relay := exec.Command("docket", "mcp", "-dir", project, "-name", "notes", "-session", session, "-sync-every", "1s",
		"--", "docket", "demo-mcp-server", notes)
	relay.Dir, relay.Env, relay.Stderr = project, env, os.Stderr
	in, err := relay.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := relay.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Process.Kill(); relay.Wait() })
	out := bufio.NewScanner(outPipe)
	out.Buffer(nil, 1<<20)

	st := store.Open(project)
	// proven waits, without a time limit of its own (the test's deadline
	// is the bound), until the session's receipts seqs all have proofs.
	proven := func(seqs ...int64) {
		t.Helper()
		for {
			set, err := st.Proofs(session)
			if err != nil {
				t.Fatalf("Proofs(%s) = %v", session, err)
			}
			have := set.Sequences()
			if !slices.ContainsFunc(seqs, func(s int64) bool { return !slices.Contains(have, s) }) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	chainPath := filepath.Join(project, ".docket", "sessions", store.SessionName(session)+".jsonl")
	// nth waits until the chain holds the i-th receipt of hook event
	// event, and returns its sequence.
	nth := func(event string, i int) int64 {
		t.Helper()
		for {
			b, err := os.ReadFile(chainPath)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var r struct {
					Payload struct {
						Sequence  int64  `json:"sequence"`
						HookEvent string `json:"hook_event"`
					} `json:"payload"`
				}
				if json.Unmarshal([]byte(line), &r) == nil && r.Payload.HookEvent == event {
					if k++; k == i {
						return r.Payload.Sequence
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// One call at a time: its decision (PreToolUse) and execution
	// (PostToolUse, signed once the answer is relayed) receipts.
	var lat []time.Duration
	for i := 1; i <= *followN; i++ {
		t0 := time.Now()
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"save_note","arguments":{"name":"n%d","text":"note %d"}}}`+"\n", i, i, i)
		if !out.Scan() {
			t.Fatalf("call %d: docket mcp answered nothing: %v", i, out.Err())
		}
		if want := fmt.Sprintf(`"id":%d,`, i); !strings.Contains(out.Text(), want) || !strings.Contains(out.Text(), "saved n") {
			t.Fatalf("call %d: answer = %s, want the saved note with %s", i, out.Text(), want)
		}
		proven(nth("PreToolUse", i), nth("PostToolUse", i))
		lat = append(lat, time.Since(t0))
		if relay.ProcessState != nil {
			t.Fatalf("docket mcp exited during the session")
		}
	}
	slices.Sort(lat)
	t.Logf("tools/call to both its receipts' proofs stored, during the session, n=%d: p50 %v, p99 %v, max %v",
		len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[(len(lat)*99)/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))

	// The client leaves: the session_end is proven before docket mcp exits
	// (no detached docket sync: DOCKET_AUTOSYNC=0).
	in.Close()
	if err := relay.Wait(); err != nil {
		t.Fatalf("docket mcp: %v", err)
	}
	chain, err := os.ReadFile(chainPath)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(strings.Count(string(chain), "\n"))
	if n < int64(2**followN+2) {
		t.Fatalf("the chain holds %d receipts, want at least %d:\n%s", n, 2**followN+2, chain)
	}
	// No wait here: Shutdown's last sync ran before docket mcp exited.
	set, err := st.Proofs(session)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(set.Len()); got != n {
		t.Errorf("Proofs(%s).Len() = %d, want %d (every receipt of the session)\n%s", session, got, n, chain)
	}

}

// startLog starts docket-log in dir (a new key, POSIX storage, a
// checkpoint at most every interval) and returns its URL and verifier key;
// it stops with the test.
func startLog(t *testing.T, dir string, env []string, interval string) (url, vkey string) {
	t.Helper()
	keygen := exec.Command("docket", "keygen", "-log", "log.test/docket", "-o", "log.key")
	keygen.Dir, keygen.Env = dir, env
	if out, err := keygen.CombinedOutput(); err != nil {
		t.Fatalf("docket keygen: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "log.key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	logd := exec.Command("docket-log", "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-key", "log.key",
		"-storage-dir", "logdata", "-checkpoint-interval", interval)
	logd.Dir, logd.Env, logd.Stderr = dir, env, os.Stderr
	if err := logd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logd.Process.Signal(os.Interrupt); logd.Wait() })
	if err := waitHTTP(url + "/checkpoint"); err != nil {
		t.Fatal(err)
	}
	return url, strings.TrimSpace(string(b))
}
