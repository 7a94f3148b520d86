package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoMCPStep runs the demo's MCP step with a freshly built docket,
// as docket demo does after docket init.
func TestDemoMCPStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds docket")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "docket")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var w bytes.Buffer
	d := &demoRun{w: &w, dir: dir, project: filepath.Join(dir, "project"), self: bin}
	if err := os.MkdirAll(d.project, 0o755); err != nil {
		t.Fatal(err)
	}
	d.env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+d.project, "HOME="+dir)
	if _, stderr, code, err := d.docket(nil, "init", "-command", bin); err != nil || code != 0 {
		t.Fatalf("docket init: %d %v %s", code, err, stderr)
	}
	if err := d.mcpStep(t.Context()); err != nil {
		t.Fatalf("mcpStep: %v\n%s", err, w.String())
	}
	out := w.String()
	for _, want := range []string{"save_note   -> ran: saved todo.md", "delete_notes -> DENIED", "mcp-high-impact-needs-pic", "never reached the server"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	t.Log(out)
}
