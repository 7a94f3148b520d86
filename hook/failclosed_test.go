package hook_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/docketlog/docket/internal/durable"
)

// TestPreFailsClosed runs every failure of DESIGN §5 through the real
// docket binary: each must block the call (exit 2) with a one-line reason
// on stderr, because Claude Code lets a call run on any other failure.
func TestPreFailsClosed(t *testing.T) {
	const bash = "claude/pre-bash.json"
	tests := []struct {
		name   string
		setup  func(t *testing.T, p *project) // breaks the project
		input  func(t *testing.T, p *project) []byte
		args   []string
		env    []string
		reason string // substring of the reason on stderr
	}{
		{name: "empty input", input: raw(""), reason: "empty hook input"},
		{name: "blank input", input: raw(" \n\t\n"), reason: "empty hook input"},
		{name: "oversized input", input: func(t *testing.T, p *project) []byte {
			return []byte(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","pad":"` + strings.Repeat("a", 1<<20) + `"}}`)
		}, reason: "too large"},
		{name: "malformed JSON", input: raw(`{"session_id":"s","tool_name":"Bash",`), reason: "malformed hook input"},
		{name: "trailing data", input: raw(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}} {}`), reason: "malformed hook input"},
		{name: "not an object", input: raw(`["Bash","ls"]`), reason: "malformed hook input"},
		{name: "duplicate command key", input: raw(`{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`), reason: "duplicate"},
		{name: "invalid UTF-8", input: raw("{\"session_id\":\"s\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls \xff\"}}"), reason: "malformed hook input"},
		{name: "no session_id", input: edit(bash, map[string]any{"session_id": nil}), reason: "no session_id"},
		{name: "no tool_name", input: edit(bash, map[string]any{"tool_name": nil}), reason: "no tool_name"},
		{name: "tool_name not a string", input: edit(bash, map[string]any{"tool_name": 7}), reason: "tool_name is not a string"},
		{name: "no tool_input", input: edit(bash, map[string]any{"tool_input": nil}), reason: "no tool_input"},
		{name: "tool_input not an object", input: edit(bash, map[string]any{"tool_input": "rm -rf /"}), reason: "no tool_input"},
		{name: "post event sent to pre", input: fixture("claude/post-bash.json"), reason: "hook_event_name"},
		{name: "missing policy", setup: func(t *testing.T, p *project) {
			os.RemoveAll(filepath.Join(p.dir, ".docket", "policy"))
		}, input: fixture(bash), reason: "policy"},
		{name: "empty policy directory", setup: func(t *testing.T, p *project) {
			os.Remove(filepath.Join(p.dir, ".docket", "policy", "docket.cedar"))
		}, input: fixture(bash), reason: "policy"},
		{name: "unparseable policy", setup: writePolicy(`@id("a") permit (principal, action, resource) when { ; `), input: fixture(bash), reason: "parse error"},
		{name: "policy without @id", setup: writePolicy(`permit (principal, action, resource);`), input: fixture(bash), reason: "@id"},
		{name: "duplicate policy ids", setup: writePolicy(`@id("a") permit (principal, action, resource); @id("a") forbid (principal, action, resource);`), input: fixture(bash), reason: "duplicate policy id"},
		{name: "policy file with no policies", setup: writePolicy("// nothing here\n"), input: fixture(bash), reason: "no policies"},
		{name: "missing key", setup: func(t *testing.T, p *project) {
			os.Remove(filepath.Join(p.dir, ".docket", "issuer.key"))
		}, input: fixture(bash), reason: "issuer key"},
		{name: "group-readable key", setup: func(t *testing.T, p *project) {
			os.Chmod(filepath.Join(p.dir, ".docket", "issuer.key"), 0o640)
		}, input: fixture(bash), reason: "chmod 600"},
		{name: "corrupt key", setup: func(t *testing.T, p *project) {
			os.WriteFile(filepath.Join(p.dir, ".docket", "issuer.key"), []byte(`{"privateKey":"zz"}`), 0o600)
		}, input: fixture(bash), reason: "issuer key"},
		{name: "chain cannot be written", setup: func(t *testing.T, p *project) {
			os.WriteFile(filepath.Join(p.dir, ".docket", "sessions"), []byte("not a directory"), 0o600)
		}, input: fixture(bash), reason: "recording the decision"},
		{name: "internal deadline", input: fixture(bash), args: []string{"-deadline", "300ms"}, env: []string{"DOCKET_TEST_FAULT=hang"}, reason: "internal deadline"},
		{name: "chain locked past the deadline", setup: func(t *testing.T, p *project) {
			holdLock(t, p, "4c5e6f70-8a9b-4c0d-9e1f-2a3b4c5d6e7f")
		}, input: fixture(bash), args: []string{"-deadline", "300ms"}, reason: "internal deadline"},
		{name: "panic", input: fixture(bash), env: []string{"DOCKET_TEST_FAULT=panic"}, reason: "panic"},
		{name: "unknown agent", input: fixture(bash), args: []string{"-agent", "cursorx"}, reason: "unknown agent"},
		{name: "bad flag", input: fixture(bash), args: []string{"-nope"}, reason: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProject(t)
			if tt.setup != nil {
				tt.setup(t, p)
			}
			args := append([]string{"hook", "pre"}, tt.args...)
			r := p.run(t, tt.input(t, p), tt.env, args...)
			if r.code != 2 {
				t.Fatalf("Pre(%s) = exit %d (stderr %q), want exit 2", tt.name, r.code, r.stderr)
			}
			if lines := strings.Count(r.stderr, "\n"); lines != 1 || !strings.HasPrefix(r.stderr, "docket: ") {
				t.Fatalf("Pre(%s) stderr = %q, want one line starting with \"docket: \"", tt.name, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.reason) {
				t.Fatalf("Pre(%s) stderr = %q, want a reason containing %q", tt.name, r.stderr, tt.reason)
			}
			if r.stdout != "" {
				t.Fatalf("Pre(%s) stdout = %q, want nothing (an answer there could allow the call)", tt.name, r.stdout)
			}
		})
	}
}

func raw(s string) func(*testing.T, *project) []byte {
	return func(*testing.T, *project) []byte { return []byte(s) }
}

func fixture(name string) func(*testing.T, *project) []byte {
	return func(t *testing.T, p *project) []byte { return p.fixture(t, name, nil) }
}

func edit(name string, edits map[string]any) func(*testing.T, *project) []byte {
	return func(t *testing.T, p *project) []byte { return p.fixture(t, name, edits) }
}

// writePolicy replaces the project's policy with one file of the given text.
func writePolicy(text string) func(*testing.T, *project) {
	return func(t *testing.T, p *project) {
		writeFile(t, filepath.Join(p.dir, ".docket", "policy", "docket.cedar"), []byte(text), 0o644)
	}
}

// holdLock takes the exclusive lock of a session chain for the rest of the test.
func holdLock(t *testing.T, p *project, session string) {
	path := filepath.Join(p.dir, ".docket", "sessions", session+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := durable.Lock(f); err != nil {
		t.Fatal(err)
	}
}

// TestPreSignalBlocks sends SIGTERM and SIGINT to a pre hook that is still
// deciding: the call must be blocked (exit 2) with a reason, not left to an
// agent that lets a killed hook's call run.
func TestPreSignalBlocks(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := newProject(t)
			cmd := exec.Command("docket", "hook", "pre")
			cmd.Dir = p.dir
			cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home, "DOCKET_TEST_FAULT=signal")
			cmd.Stdin = bytes.NewReader(p.fixture(t, "claude/pre-bash.json", nil))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stderr)
			line, err := r.ReadString('\n')
			if err != nil || !strings.Contains(line, "waiting for a signal") {
				cmd.Process.Kill()
				t.Fatalf("first stderr line = %q, %v; want the fault's", line, err)
			}
			cmd.Process.Signal(sig)
			rest, _ := io.ReadAll(r)
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("hook pre after %v: %v (stderr %q), want exit 2", sig, err, rest)
			}
			if !strings.Contains(string(rest), "blocked") || !strings.Contains(string(rest), "stopped before deciding") {
				t.Fatalf("hook pre after %v: stderr %q, want the call blocked because it was stopped", sig, rest)
			}
		})
	}
}
