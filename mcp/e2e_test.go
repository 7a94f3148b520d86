package mcp_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
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

// newProject makes project a Docket project with a new issuer key and
// returns its store, the key, and the default policy with servers
// trusted (for the caller to edit and write).
func newProject(t *testing.T, project string, servers ...string) (*store.Store, ed25519.PrivateKey, []byte) {
	t.Helper()
	st := store.Open(project)
	priv, kf := receipts.GenerateKey()
	if err := os.MkdirAll(st.PolicyDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := receipts.WriteKeyFile(st.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	pol := policy.Default
	for _, s := range servers {
		var changed bool
		var err error
		if pol, changed, err = mcp.TrustServer(pol, s); err != nil || !changed {
			t.Fatalf("TrustServer(%s) = %v, %v; want a changed policy", s, changed, err)
		}
	}
	return st, priv, pol
}

// TestEndToEnd drives the npm filesystem and everything servers with the
// TypeScript SDK's client, each through `docket mcp`.
func TestEndToEnd(t *testing.T) {
	nm := nodeModules(t)
	docket := buildDocket(t)

	project := t.TempDir()
	st, priv, pol := newProject(t, project, "fs", "everything")
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

// TestTypeScriptView relays the seed corpus of FuzzClientView, through the
// built docket mcp, to a server that reads every message as the TypeScript
// SDK does (testdata/tsview.mjs: JSON.parse and the SDK's zod schemas).
// Every tools/call it reads must be one the gate allowed, in order, with
// the tool, the arguments and the id its decision receipt names.
func TestTypeScriptView(t *testing.T) {
	nm := nodeModules(t)
	docket := buildDocket(t)
	project := t.TempDir()
	st, priv, pol := newProject(t, project, "ts")
	if err := os.WriteFile(filepath.Join(st.PolicyDir(), "docket.cedar"), pol, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	schema, view := filepath.Join(dir, "schema.json"), filepath.Join(dir, "view.jsonl")
	if err := os.WriteFile(schema, mcp.ToolSchemaT(t), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(docket, "mcp", "-dir", project, "-name", "ts", "-session", "ts", "--", "node", "testdata/tsview.mjs", view, schema)
	cmd.Env = append(os.Environ(), "DOCKET_MCP_NODE_MODULES="+nm)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(outR)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	// Each line is followed by a ping: once its answer is back, the line
	// was handled (the relay and the server answer in order).
	send := func(i int, line []byte) {
		barrier := fmt.Sprintf(`{"jsonrpc":"2.0","id":"barrier-%d","method":"ping"}`, i)
		if _, err := in.Write(append(append(line, '\n'), barrier+"\n"...)); err != nil {
			t.Fatal(err)
		}
		for out.Scan() {
			if strings.Contains(out.Text(), fmt.Sprintf(`"id":"barrier-%d"`, i)) {
				return
			}
		}
		t.Fatalf("docket mcp ended before answering line %d: %v", i, out.Err())
	}
	send(0, []byte(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`))
	corpus := mcp.ReadCorpus(t, "FuzzClientView")
	for i, line := range corpus {
		send(i+1, line)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docket mcp: %v", err)
	}

	lines, err := st.Receipts("ts")
	if err != nil {
		t.Fatal(err)
	}
	var allows []receipts.Payload
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(priv.Public().(ed25519.PublicKey)), SessionID: "ts"}) {
		if r.Outcome != receipts.Valid {
			t.Fatalf("receipt %d: %v %s", i+1, r.Outcome, r.Detail)
		}
		var env struct{ Payload receipts.Payload }
		_ = json.Unmarshal(lines[i], &env)
		if env.Payload.HookEvent == receipts.PreToolUse && env.Payload.Decision == "allow" {
			allows = append(allows, env.Payload)
		}
	}
	data, err := os.ReadFile(view)
	if err != nil {
		t.Fatal(err)
	}
	var calls []map[string]any
	for _, l := range receipts.SplitLines(data) {
		var v map[string]any
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		switch {
		case v["kind"] == "invalid-call":
			t.Errorf("the relay forwarded a tools/call the TypeScript SDK does not read as one: %s", l)
		case v["method"] == "tools/call":
			calls = append(calls, v)
		}
	}
	if len(calls) != len(allows) || len(calls) == 0 {
		t.Fatalf("the TypeScript server read %d tools/call, the gate allowed %d", len(calls), len(allows))
	}
	for i, c := range calls {
		a := allows[i]
		id, _ := receipts.Canonicalize(c["id"])
		in, _ := receipts.HashJSON(c["arguments"])
		if a.ToolName != "mcp__ts__"+c["name"].(string) || a.ToolUseID != "jsonrpc:"+string(id) || a.ToolInputHash != in {
			t.Errorf("the TypeScript SDK read call %d as %v (input %s); the gate decided %s %s %s", i, c, in, a.ToolName, a.ToolUseID, a.ToolInputHash)
		}
	}
	t.Logf("%d corpus lines, %d calls read alike by the TypeScript SDK and the gate", len(corpus), len(calls))
}
