package mcp_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// nodeModules returns the npm packages the end-to-end test drives, or
// skips: .ci/deps/mcp.sh installs them and exports DOCKET_MCP_NODE_MODULES.
func nodeModules(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test with npm MCP servers: not in -short")
	}
	nm := os.Getenv("DOCKET_MCP_NODE_MODULES")
	if nm == "" {
		t.Skip("DOCKET_MCP_NODE_MODULES is unset: run . .ci/deps/mcp.sh (npm MCP servers and the TypeScript SDK client)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is missing: run . .ci/deps/mcp.sh")
	}
	for _, p := range []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-everything"} {
		if _, err := os.Stat(filepath.Join(nm, p, "package.json")); err != nil {
			t.Skipf("%s is not installed in %s: run . .ci/deps/mcp.sh", p, nm)
		}
	}
	return nm
}

// buildDocket builds the docket binary.
func buildDocket(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docket")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/docket").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestEndToEnd drives the npm filesystem and everything servers with the
// TypeScript SDK's client, each through `docket mcp`.
func TestEndToEnd(t *testing.T) {
	nm := nodeModules(t)
	docket := buildDocket(t)

	project := t.TempDir()
	st := store.Open(project)
	priv, kf := receipts.GenerateKey()
	if err := os.MkdirAll(st.PolicyDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := receipts.WriteKeyFile(st.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	pol := policy.Default
	for _, s := range []string{"fs", "everything"} {
		var err error
		if pol, _, err = mcp.TrustServer(pol, s); err != nil {
			t.Fatal(err)
		}
	}
	pol = append(pol, "\n@id(\"no-fs-writes\")\n@reason(\"the filesystem server is read-only here\")\nforbid (principal, action == Action::\"mcp__fs__write_file\", resource);\n"...)
	if err := os.WriteFile(filepath.Join(st.PolicyDir(), "docket.cedar"), pol, 0o600); err != nil {
		t.Fatal(err)
	}

	root := filepath.Join(project, "served") // MCP arguments meet the file rules (issue 20)
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the server"), 0o644); err != nil {
		t.Fatal(err)
	}
	signer, other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"trusted_keys":{"k1":"`+base64.StdEncoding.EncodeToString(signer.Public().(ed25519.PublicKey))+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sumArgs := map[string]any{"a": 1.0, "b": 2.0}
	withPIC := func(p map[string]any) map[string]any {
		return map[string]any{"a": 1, "b": 2, "__pic": p}
	}
	evil := filepath.Join(root, "evil.txt")
	plan := []map[string]any{
		{"name": "fs", "command": []string{docket, "mcp", "-dir", project, "-name", "fs", "-session", "fs", "--",
			"node", filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js"), root},
			"calls": []map[string]any{
				{"tool": "read_text_file", "arguments": map[string]any{"path": filepath.Join(root, "hello.txt")}},
				{"tool": "write_file", "arguments": map[string]any{"path": evil, "content": "pwned"}},
			}},
		{"name": "everything", "command": []string{docket, "mcp", "-dir", project, "-name", "everything", "-session", "everything",
			"-high-impact", "get-sum", "-keys", keys, "--",
			"node", filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
			"calls": []map[string]any{
				{"tool": "echo", "arguments": map[string]any{"message": "hi"}},
				{"tool": "get-sum", "arguments": sumArgs},
				{"tool": "get-sum", "arguments": withPIC(proposal(t, signer, "get-sum", sumArgs))},
				{"tool": "get-sum", "arguments": withPIC(proposal(t, other, "get-sum", sumArgs))},
			}},
	}
	planJSON, _ := json.Marshal(plan)
	cmd := exec.Command("node", "testdata/client.mjs", string(planJSON))
	cmd.Env = append(os.Environ(), "DOCKET_MCP_NODE_MODULES="+nm)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	type answer struct {
		Server, Tool, Text, Error string
		IsError                   bool
		Tools                     []string
	}
	var got []answer
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var a answer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("client printed %q", sc.Bytes())
		}
		got = append(got, a)
	}
	want := []struct {
		tool    string
		allowed bool
		text    string
	}{
		{"", true, ""},
		{"read_text_file", true, "hello from the server"},
		{"write_file", false, "no-fs-writes"},
		{"", true, ""},
		{"echo", true, "hi"},
		{"get-sum", false, "mcp-high-impact-needs-pic"},
		{"get-sum", true, "3"},
		{"get-sum", false, "PIC_EVIDENCE_FAILED"},
	}
	if len(got) != len(want) {
		t.Fatalf("client printed %d answers, want %d:\n%s", len(got), len(want), out)
	}
	for i, w := range want {
		a := got[i]
		if w.tool == "" {
			if len(a.Tools) == 0 {
				t.Errorf("answer %d: tools/list = %+v", i, a)
			}
			continue
		}
		if a.Error != "" || a.Tool != w.tool || a.IsError == w.allowed || !strings.Contains(a.Text, w.text) {
			t.Errorf("answer %d = %+v; want %s allowed=%v with %q", i, a, w.tool, w.allowed, w.text)
		}
	}
	if _, err := os.Stat(evil); !os.IsNotExist(err) {
		t.Fatalf("the denied write_file reached the server: Stat(%s) = %v", evil, err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	for _, s := range []string{"fs", "everything"} {
		lines, err := st.Receipts(s)
		if err != nil {
			t.Fatal(err)
		}
		var decisions []string
		for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(pub), SessionID: s}) {
			if r.Outcome != receipts.Valid {
				t.Fatalf("%s receipt %d: %v %s", s, i+1, r.Outcome, r.Detail)
			}
			var env struct{ Payload receipts.Payload }
			_ = json.Unmarshal(lines[i], &env)
			if env.Payload.HookEvent != "" {
				decisions = append(decisions, env.Payload.HookEvent+"/"+env.Payload.Decision)
			}
		}
		t.Logf("%s chain: %s", s, strings.Join(decisions, " "))
		if len(lines) < 4 {
			t.Fatalf("%s chain has %d receipts", s, len(lines))
		}
	}
	// docket verify, as the hooks' chains are verified, agrees.
	v := exec.Command(docket, "verify", "-key-file", st.KeyPath(), st.ChainPath("fs"), st.ChainPath("everything"))
	if vout, err := v.CombinedOutput(); err != nil {
		t.Fatalf("docket verify: %v\n%s", err, vout)
	}
}
