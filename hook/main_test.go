package hook_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/cli/clitest"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// The end-to-end tests run docket as a process: this test binary, which
// answers as docket when started under that name from the $PATH that
// clitest.Main sets up (internal/cli/clitest).
func TestMain(m *testing.M) { clitest.Main(m) }

// project is a temporary project with docket set up: an issuer key and a
// policy directory.
type project struct {
	dir  string
	home string // $HOME of the hooks, outside the project
	key  ed25519.PrivateKey
}

// newProject makes a project whose policy is the given .cedar files (paths),
// or the default policy when none are given.
func newProject(t testing.TB, policies ...string) *project {
	t.Helper()
	dir := t.TempDir()
	// Resolve symlinks (a /tmp that is a link) so paths compare equal.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, ".docket", "policy")
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if len(policies) == 0 {
		writeFile(t, filepath.Join(pdir, policy.DefaultName), policy.Default, 0o644)
	}
	for _, p := range policies {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(pdir, filepath.Base(p)), data, 0o644)
	}
	priv, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(filepath.Join(dir, ".docket", "issuer.key"), kf); err != nil {
		t.Fatal(err)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &project{dir: dir, home: home, key: priv}
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// fixture reads testdata/hook/<name>, moves it into the project (the
// fixtures' /home/user/project is replaced by the project directory) and
// applies edits: "session_id", "tool_use_id" and friends replace top-level
// members, "tool_input.X" replaces a tool_input member, and a nil value
// deletes the member.
func (p *project) fixture(t testing.TB, name string, edits map[string]any) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "hook", name))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte("/home/user/project"), []byte(p.dir))
	if len(edits) == 0 {
		return data
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range edits {
		obj := m
		if sub, ok := strings.CutPrefix(k, "tool_input."); ok {
			obj, k = m["tool_input"].(map[string]any), sub
		}
		if v == nil {
			delete(obj, k)
		} else {
			obj[k] = v
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// result is what one docket process did.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the docket binary in the project with stdin and extra
// environment variables.
func (p *project) run(t testing.TB, stdin []byte, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command("docket", args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home, "XDG_STATE_HOME=")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running docket %v: %v", args, err)
	}
	return r
}

// chain returns the receipts of a session.
func (p *project) chain(t testing.TB, session string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, ".docket", "sessions", session+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return receipts.SplitLines(data)
}

// verify checks that a session's chain verifies, every receipt valid, and
// returns its payloads.
func (p *project) verify(t testing.TB, session string) []receipts.Payload {
	t.Helper()
	lines := p.chain(t, session)
	pub := p.key.Public().(ed25519.PublicKey)
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(pub), SessionID: session}) {
		if r.Outcome != receipts.Valid {
			t.Fatalf("VerifyChain: receipt %d = %v (%s: %s), want valid", i+1, r.Outcome, r.Cause, r.Detail)
		}
	}
	out := make([]receipts.Payload, len(lines))
	for i, l := range lines {
		var r struct{ Payload receipts.Payload }
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		out[i] = r.Payload
	}
	return out
}
