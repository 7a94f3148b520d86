package hook_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mount runs mount(8) with args, skipping the test when it cannot: mounting
// needs root, which CI has.
func mount(t *testing.T, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a file system needs root (CI runs this test as root)")
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("skipped: mount %v: %v: %s", args, err, out)
	}
}

// mountOver mounts a tmpfs of the given size over a project's .docket
// directory, keeping its files.
func mountOver(t *testing.T, dir, size string) {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "saved")
	if err := os.CopyFS(saved, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	mount(t, "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir)
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	if err := os.CopyFS(dir, os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	// CopyFS makes every file 0644; the key must stay private.
	if err := os.Chmod(filepath.Join(dir, "issuer.key"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fill writes a file in dir until the file system is full, and returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// spooled counts the events waiting in the project's spool and in the
// fallback spool under the hooks' home.
func (p *project) spooled(t *testing.T) (project, fallback int) {
	t.Helper()
	a, _ := filepath.Glob(filepath.Join(p.dir, ".docket", "spool", "*.json"))
	b, _ := filepath.Glob(filepath.Join(p.home, ".local", "state", "docket", "spool", "*", "*.json"))
	return len(a), len(b)
}

// postEvents runs the pre hook of the calls first..first+n-1, then (after
// broken, which breaks the store) their post hooks, and checks the no-loss
// rule: every post exits 0, receipted or with a warning naming where it
// was kept, never "could not be spooled". It returns how many posts said
// they kept their event in the project's spool and in the fallback.
func (p *project) postEvents(t *testing.T, first, n int, broken func()) (keptProject, keptFallback int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		in := p.fixture(t, "claude/pre-bash.json", map[string]any{"tool_use_id": fmt.Sprint("toolu_", i)})
		if r := p.run(t, in, nil, "hook", "pre"); r.code != 0 {
			t.Fatalf("Pre %d = exit %d (%s), want 0", i, r.code, r.stderr)
		}
	}
	broken()
	for i := first; i < first+n; i++ {
		in := p.fixture(t, "claude/post-bash.json", map[string]any{"tool_use_id": fmt.Sprint("toolu_", i)})
		r := p.run(t, in, nil, "hook", "post")
		switch {
		case r.code != 0 || strings.Contains(r.stderr, "could not be spooled"):
			t.Fatalf("Post %d = exit %d (%s), want 0, receipted or with the event kept", i, r.code, r.stderr)
		case strings.Contains(r.stderr, "kept in .docket/spool/"):
			keptProject++
		case strings.Contains(r.stderr, "kept in "+p.home):
			keptFallback++
		}
	}
	return keptProject, keptFallback
}

// executions returns the execution receipts of the chain, checking that
// the chain verifies and that each links its decision.
func (p *project) executions(t *testing.T) int {
	t.Helper()
	n := 0
	for _, pl := range p.verify(t, claudeSession) {
		if pl.HookEvent == "PostToolUse" {
			if pl.DecisionReceiptHash == "" {
				t.Fatalf("execution %d has no decision link", pl.Sequence)
			}
			n++
		}
	}
	return n
}

// checkNoLoss checks that every event sent is receipted or spooled, and
// returns how many are spooled in the project and in the fallback.
func (p *project) checkNoLoss(t *testing.T, sent int) (inProject, inFallback int) {
	t.Helper()
	inProject, inFallback = p.spooled(t)
	if execs := p.executions(t); execs+inProject+inFallback != sent {
		t.Fatalf("%d events sent, %d receipted + %d spooled in the project + %d in the fallback", sent, execs, inProject, inFallback)
	}
	return inProject, inFallback
}

// drainAndCheck receipts what is spooled with docket sync and checks that
// the chain holds every execution sent and that the spools are empty.
func (p *project) drainAndCheck(t *testing.T, sent, spooled int) {
	t.Helper()
	r := p.run(t, nil, nil, "sync")
	if !strings.Contains(r.stdout, fmt.Sprintf("receipted %d spooled events", spooled)) {
		t.Fatalf("docket sync = exit %d, stdout %q, stderr %q; want %d spooled events receipted", r.code, r.stdout, r.stderr, spooled)
	}
	if a, b := p.spooled(t); a+b != 0 {
		t.Fatalf("after docket sync the spools hold %d and %d events, want none", a, b)
	}
	if execs := p.executions(t); execs != sent {
		t.Fatalf("chain holds %d executions, want %d", execs, sent)
	}
}

// TestNoLossFullDisk fills the file system of .docket (a small tmpfs):
// the post events that cannot be receipted go to the project spool, in the
// room its reserve file gave back, then to the fallback spool in the
// user's state directory; docket sync receipts them all later.
func TestNoLossFullDisk(t *testing.T) {
	p := newProject(t)
	dir := filepath.Join(p.dir, ".docket")
	mountOver(t, dir, "4m")
	// One call receipted while there is room: its drain makes the reserve.
	p.postEvents(t, 0, 1, func() {})
	if _, err := os.Stat(filepath.Join(dir, "spool", ".reserve")); err != nil {
		t.Fatalf("no spool reserve after a successful post: %v", err)
	}
	const n = 8
	// Full: the reserve makes room in the project spool, and the next post
	// that can append receipts the event and puts the reserve back.
	var fillers []string
	kept, _ := p.postEvents(t, 1, n, func() { fillers = append(fillers, fill(t, dir)) })
	if kept == 0 {
		t.Errorf("no event kept in the project spool on a full disk: the reserve was not used")
	}
	p.checkNoLoss(t, 1+n)
	// Full, and the reserve's room taken too: the fallback spool.
	keptProject, keptFallback := p.postEvents(t, 1+n, n, func() {
		fillers = append(fillers, fill(t, dir))
		os.Remove(filepath.Join(dir, "spool", ".reserve"))
		fillers = append(fillers, fill(t, filepath.Join(dir, "sessions")))
	})
	inProject, inFallback := p.checkNoLoss(t, 1+2*n)
	if keptFallback == 0 || inFallback == 0 {
		t.Errorf("no event in the fallback spool when the project's was full")
	}
	t.Logf("full disk: kept %d in the project spool, %d in the fallback, %d and %d still there", keptProject, keptFallback, inProject, inFallback)

	for _, f := range fillers {
		os.Remove(f)
	}
	p.drainAndCheck(t, 1+2*n, inProject+inFallback)
	if _, err := os.Stat(filepath.Join(dir, "spool", ".reserve")); err != nil {
		t.Errorf("the reserve is not back after draining: %v", err)
	}
}

// TestNoLossReadOnly makes .docket read-only: every post event goes to the
// fallback spool, and docket sync receipts them once .docket is writable.
func TestNoLossReadOnly(t *testing.T) {
	p := newProject(t)
	dir := filepath.Join(p.dir, ".docket")
	mount(t, "--bind", dir, dir)
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	const n = 5
	p.postEvents(t, 0, n, func() { mount(t, "-o", "remount,ro,bind", dir) })
	if inProject, inFallback := p.checkNoLoss(t, n); inFallback != n {
		t.Fatalf("%d events sent to a read-only store: %d spooled in the project, %d in the fallback; want all in the fallback", n, inProject, inFallback)
	}
	mount(t, "-o", "remount,rw,bind", dir)
	p.drainAndCheck(t, n, n)
}
