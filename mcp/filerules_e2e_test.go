package mcp_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// TestSecretsThroughMCPSideDoorDenied is issue 20's family 3, "secrets
// through a side door": the npm @modelcontextprotocol/server-filesystem,
// trusted in the default policy and driven by the TypeScript SDK's client
// through the built `docket mcp`, must be held to the file rules the
// agents' own Read and Write are held to. Reading .env, or ~/.ssh/id_ed25519
// through a symlink in the project, and writing .claude/settings.json or
// .docket/policy/… are denied; ordinary project files are read and written.
// The server alone, whose allowed directories include the home directory,
// serves both secrets: its own rules do not replace the project's.
func TestSecretsThroughMCPSideDoorDenied(t *testing.T) {
	nm := nodeModules(t)
	docket := buildDocket(t)

	evalDir := func(d string) string {
		d, err := filepath.EvalSymlinks(d)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	project, home := evalDir(t.TempDir()), evalDir(t.TempDir())
	st, priv, pol := newProject(t, project, "fs")
	policyFile := filepath.Join(st.PolicyDir(), "docket.cedar")
	const (
		envSecret = "AWS_SECRET_ACCESS_KEY=side-door-env-secret"
		sshSecret = "-----BEGIN OPENSSH PRIVATE KEY----- side-door-ssh-secret"
		settings  = `{"hooks":{"PreToolUse":[]}}`
	)
	for name, data := range map[string]string{
		policyFile:                                      string(pol),
		filepath.Join(project, ".env"):                  envSecret,
		filepath.Join(project, "hello.txt"):             "hello from the project",
		filepath.Join(project, ".claude/settings.json"): settings,
		filepath.Join(home, ".ssh/id_ed25519"):          sshSecret,
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, ".ssh/id_ed25519"), filepath.Join(project, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	server := []string{"node", filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js"), project, home}
	type call struct {
		tool    string
		args    map[string]any
		allowed bool
		want    string // in the answer: the content, or the policy that denied
	}
	gated := []call{
		{"read_text_file", map[string]any{"path": ".env"}, false, "secrets-by-name"},
		{"read_text_file", map[string]any{"path": filepath.Join(project, ".env")}, false, "secrets-by-name"},
		{"read_text_file", map[string]any{"path": "notes.txt"}, false, "secrets-by-name"},
		{"read_text_file", map[string]any{"path": "~/.ssh/id_ed25519"}, false, "secrets-by-name"},
		{"read_multiple_files", map[string]any{"paths": []string{"hello.txt", ".env"}}, false, "secrets-by-name"},
		{"list_directory", map[string]any{"path": "~/.ssh"}, false, "secrets-by-directory"},
		{"write_file", map[string]any{"path": ".claude/settings.json", "content": `{"hooks":{}}`}, false, "protect-docket-and-hooks"},
		{"write_file", map[string]any{"path": ".docket/policy/allow.cedar", "content": "@id(\"x\") permit (principal, action, resource);"}, false, "protect-docket-and-hooks"},
		{"edit_file", map[string]any{"path": ".docket/policy/docket.cedar", "edits": []map[string]string{{"oldText": "forbid", "newText": "permit"}}}, false, "protect-docket-and-hooks"},
		{"move_file", map[string]any{"source": "hello.txt", "destination": ".docket/policy/evil.cedar"}, false, "protect-docket-and-hooks"},
		// Everyday work goes on.
		{"read_text_file", map[string]any{"path": "hello.txt"}, true, "hello from the project"},
		{"write_file", map[string]any{"path": "new.txt", "content": "written through mcp, mentioning .env and ~/.ssh"}, true, "Successfully wrote"},
		{"edit_file", map[string]any{"path": "new.txt", "edits": []map[string]string{{"oldText": "written", "newText": "edited"}}}, true, "edited"},
		{"move_file", map[string]any{"source": "new.txt", "destination": "moved.txt"}, true, "Successfully moved"},
		{"list_directory", map[string]any{"path": "."}, true, "hello.txt"},
		{"read_text_file", map[string]any{"path": ".env.example"}, true, "ENOENT"},
	}
	// The server on its own: nothing stops the side door.
	ungated := []call{
		{"read_text_file", map[string]any{"path": ".env"}, true, envSecret},
		{"read_text_file", map[string]any{"path": "notes.txt"}, true, sshSecret},
	}
	toPlan := func(calls []call) []map[string]any {
		var out []map[string]any
		for _, c := range calls {
			out = append(out, map[string]any{"tool": c.tool, "arguments": c.args})
		}
		return out
	}
	plan := []map[string]any{
		{"name": "fs", "command": append([]string{docket, "mcp", "-dir", project, "-name", "fs", "-session", "side-door", "--"}, server...),
			"calls": toPlan(gated)},
		{"name": "ungated", "command": server, "calls": toPlan(ungated)},
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "testdata/client.mjs", string(planJSON))
	cmd.Env = append(os.Environ(), "DOCKET_MCP_NODE_MODULES="+nm, "HOME="+home)
	cmd.Dir = "."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	type answer struct {
		Server, Tool, Text, Error string
		IsError                   bool
		Tools                     []string
		Meta                      map[string]any
	}
	var got []answer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("client printed %q", sc.Bytes())
		}
		if a.Tools == nil {
			got = append(got, a)
		}
	}
	want := append(append([]call(nil), gated...), ungated...)
	if len(got) != len(want) {
		t.Fatalf("client printed %d answers, want %d:\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		a := got[i]
		denied := a.Meta["io.docketlog/decision"] == "deny"
		switch {
		case a.Error != "" || a.Tool != w.tool:
			t.Errorf("call %d %s %v: answer %+v", i, w.tool, w.args, a)
		case w.allowed && denied:
			t.Errorf("call %d %s %v denied: %s", i, w.tool, w.args, a.Text)
		case !w.allowed && (!denied || !a.IsError):
			t.Errorf("call %d %s %v not denied: %+v", i, w.tool, w.args, a)
		case !strings.Contains(a.Text, w.want):
			t.Errorf("call %d %s %v answered %q, want it to contain %q", i, w.tool, w.args, a.Text, w.want)
		}
		if a.Server == "fs" && (strings.Contains(a.Text, "side-door-env-secret") || strings.Contains(a.Text, "side-door-ssh-secret")) {
			t.Errorf("call %d %s %v leaked a secret through docket mcp: %q", i, w.tool, w.args, a.Text)
		}
	}

	// What was denied had no effect; what was allowed did.
	if b, err := os.ReadFile(filepath.Join(project, ".claude/settings.json")); err != nil || string(b) != settings {
		t.Errorf(".claude/settings.json = %q, %v; want it unchanged", b, err)
	}
	for _, p := range []string{".docket/policy/allow.cedar", ".docket/policy/evil.cedar", "new.txt"} {
		if _, err := os.Stat(filepath.Join(project, p)); !os.IsNotExist(err) {
			t.Errorf("Stat(%s) = %v, want it absent", p, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "moved.txt")); err != nil || !strings.HasPrefix(string(b), "edited through mcp") {
		t.Errorf("moved.txt = %q, %v; want the edited file", b, err)
	}
	if b, err := os.ReadFile(policyFile); err != nil || !bytes.Equal(b, pol) {
		t.Errorf("the policy file changed: %v", err)
	}

	// Every decision is on the chain, which verifies.
	lines, err := st.Receipts("side-door")
	if err != nil {
		t.Fatal(err)
	}
	pub := receipts.PinnedKey(priv.Public().(ed25519.PublicKey))
	denies := 0
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: pub, SessionID: "side-door"}) {
		if r.Outcome != receipts.Valid {
			t.Fatalf("receipt %d: %v %s", i+1, r.Outcome, r.Detail)
		}
		var env struct{ Payload receipts.Payload }
		if err := json.Unmarshal(lines[i], &env); err != nil {
			t.Fatal(err)
		}
		if env.Payload.Decision == policy.Deny {
			denies++
		}
	}
	if wantDenies := 10; denies != wantDenies {
		t.Errorf("the chain has %d deny receipts, want %d", denies, wantDenies)
	}
}
