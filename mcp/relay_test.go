package mcp_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/receipts"
)

const noWrite = `@id("no-write")
@reason("the test forbids write")
forbid (principal, action == Action::"mcp__t__write", resource);`

func TestRelayAllowDeny(t *testing.T) {
	g := newGate(t, noWrite)
	s := start(t, g, nil)
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	if m := s.recv(); m["result"].(map[string]any)["serverInfo"] == nil {
		t.Fatalf("initialize result = %v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	if m := s.recv(); m["id"] != "list" || len(m["result"].(map[string]any)["tools"].([]any)) != 6 {
		t.Fatalf("tools/list result = %v", m)
	}
	// The same list again is not receipted again.
	s.send(`{"jsonrpc":"2.0","id":"list2","method":"tools/list"}`)
	if m := s.recv(); m["id"] != "list2" {
		t.Fatalf("tools/list result = %v", m)
	}
	s.send(call(1, "echo", map[string]any{"x": "y"}))
	m := s.recv()
	if res := m["result"].(map[string]any); m["id"] != 1.0 || res["isError"] == true || res["content"].([]any)[0].(map[string]any)["text"] != `{"x":"y"}` {
		t.Fatalf("echo result = %v", m)
	}
	target := filepath.Join(t.TempDir(), "effect")
	s.send(call(2, "write", map[string]any{"path": target, "content": "x"}))
	m = s.recv()
	res := m["result"].(map[string]any)
	meta := res["_meta"].(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if m["id"] != 2.0 || res["isError"] != true || !strings.Contains(text, "no-write") || meta[mcp.MetaDecision] != "deny" {
		t.Fatalf("denied write = %v", m)
	}
	// The relay goes on: a call after the deny still works, and the
	// server answers it in order.
	s.send(call(3, "notify", map[string]any{}))
	if m := s.recv(); m["method"] != "notifications/message" {
		t.Fatalf("notification = %v, want relayed first", m)
	}
	if m := s.recv(); m["id"] != 3.0 {
		t.Fatalf("notify result = %v", m)
	}
	s.send(call(4, "fail", map[string]any{}))
	if m := s.recv(); m["result"].(map[string]any)["isError"] != true {
		t.Fatalf("fail result = %v", m)
	}
	if r := s.close(); r.code != 0 || r.err != nil {
		t.Fatalf("Run = %d, %v; want 0, nil", r.code, r.err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the denied write ran: Stat = %v", err)
	}
	p := chain(t, g)
	var got []string
	for _, r := range p {
		got = append(got, r.HookEvent+"/"+r.Decision+"/"+r.Reason+"/"+strings.TrimPrefix(r.ToolName, "mcp__t__")+r.LifecycleEvent)
	}
	want := []string{
		"SessionStart///session_start", "///mcp__tmcp_tools_list", "PreToolUse/allow/cedar_allow/echo", "PostToolUse/allow/executed/echo",
		"PreToolUse/deny/cedar_deny/write",
		"PreToolUse/allow/cedar_allow/notify", "PostToolUse/allow/executed/notify",
		"PreToolUse/allow/cedar_allow/fail", "PostToolUseFailure/allow/execution_failed/fail",
		"SessionEnd///session_end",
	}
	// An execution is recorded after its response is relayed, so it may
	// come after the next call's decision: compare as sets. Each execution
	// links its decision (checked by VerifyChain and DecisionReceiptHash).
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("chain =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	lines, _ := g.Store().Receipts("s")
	echoIn, _ := receipts.HashJSON(map[string]any{"x": "y"})
	for i, r := range p {
		switch {
		case r.Decision == "deny":
			if h, _ := receipts.Hash(lines[i]); meta[mcp.MetaReceipt] != h {
				t.Fatalf("denial _meta receipt = %v, want the deny receipt's hash %s", meta[mcp.MetaReceipt], h)
			}
		case r.HookEvent == receipts.PreToolUse && r.ToolName == "mcp__t__echo":
			if r.ToolInputHash != echoIn {
				t.Fatalf("echo decision = %+v, want input hash %s", r, echoIn)
			}
		case r.HookEvent == receipts.PostToolUse && r.ToolName == "mcp__t__echo":
			if r.ToolOutputHash == "" || r.DecisionReceiptHash == "" || r.ToolDurationMs == nil {
				t.Fatalf("echo execution = %+v", r)
			}
		}
	}
}

func TestRelayRefusals(t *testing.T) {
	g := newGate(t)
	s := start(t, g, func(c *mcp.Config) { c.MaxLine = 4096 })
	cases := []struct {
		name, line string
		code       float64 // JSON-RPC error code; 0: a denied tool result
	}{
		{"duplicate key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"write","arguments":{}}}`, 0},
		{"lone surrogate", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"a":"\ud800"}}}`, 0},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":\"\xff\"}}}", 0},
		{"arguments not an object", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`, 0},
		{"not JSON", `{"jsonrpc":"2.0","id":5,`, -32700},
		{"duplicate method", `{"jsonrpc":"2.0","id":6,"method":"tools/list","method":"tools/call"}`, 0},
		{"oversize", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, -32600},
		{"batch with a call", `[{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}]`, -32600},
	}
	for _, c := range cases {
		s.send(c.line)
		m := s.recv()
		if c.code == 0 {
			if res, ok := m["result"].(map[string]any); !ok || res["isError"] != true {
				t.Errorf("%s: answer %v, want a denied tool result", c.name, m)
			}
			continue
		}
		if e, ok := m["error"].(map[string]any); !ok || e["code"] != c.code {
			t.Errorf("%s: answer %v, want error %v", c.name, m, c.code)
		}
	}
	// The server saw none of it: the next call gets the next answer.
	s.send(call(9, "echo", map[string]any{}))
	if m := s.recv(); m["id"] != 9.0 {
		t.Fatalf("echo after refusals = %v", m)
	}
	s.close()
	var denies int
	for _, p := range chain(t, g) {
		if p.Decision == "deny" {
			denies++
		}
	}
	if denies != 6 {
		t.Fatalf("chain has %d denies, want 6 (one per refused tools/call)", denies)
	}
}

// TestRelayStateless speaks protocol 2026-07-28: no initialize, the
// version in each request's _meta, resultType in results.
func TestRelayStateless(t *testing.T) {
	g := newGate(t, noWrite)
	s := start(t, g, nil)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},` + meta + `}}`)
	if m := s.recv(); m["id"] != 1.0 || m["result"].(map[string]any)["isError"] == true {
		t.Fatalf("echo = %v", m)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{},` + meta + `}}`)
	if m := s.recv(); m["result"].(map[string]any)["resultType"] != "complete" || m["result"].(map[string]any)["isError"] != true {
		t.Fatalf("denial = %v, want an isError result with resultType complete", m)
	}
	s.close()
}

func TestRelayHideDenied(t *testing.T) {
	g := newGate(t, noWrite)
	s := start(t, g, func(c *mcp.Config) { c.HideDenied = true; c.HighImpact = []string{"echo"} })
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m := s.recv()
	var names []string
	for _, tool := range m["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	// write is always denied; echo is high impact but runs with a proposal.
	if got := strings.Join(names, " "); got != "echo fail notify hang exit" {
		t.Fatalf("tools/list with -hide-denied = %s, want every tool but write", got)
	}
	s.close()
	if lists := toolsLists(t, g); lists != 1 {
		t.Fatalf("%d tools/list receipts, want 1", lists)
	}
}

func TestRelayDenyAsError(t *testing.T) {
	g := newGate(t, noWrite)
	s := start(t, g, func(c *mcp.Config) { c.DenyAsError = true })
	s.send(call(1, "write", map[string]any{"path": filepath.Join(t.TempDir(), "x"), "content": ""}))
	m := s.recv()
	e, ok := m["error"].(map[string]any)
	if !ok || e["code"] != float64(mcp.DeniedCode) || !strings.Contains(e["message"].(string), "no-write") || m["id"] != 1.0 {
		t.Fatalf("denial = %v, want error %d", m, mcp.DeniedCode)
	}
	s.close()
}

func TestRelayCancelAndServerExit(t *testing.T) {
	g := newGate(t)
	s := start(t, g, nil)
	s.send(call(1, "hang", map[string]any{}))
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`)
	s.send(call(2, "hang", map[string]any{}))
	s.send(call(3, "exit", map[string]any{}))
	r := <-s.done
	if r.code != 3 {
		t.Fatalf("Run = %d, %v; want the server's exit code 3", r.code, r.err)
	}
	var got []string
	for _, p := range chain(t, g) {
		if p.LifecycleEvent != receipts.LifecycleToolsList {
			got = append(got, p.HookEvent+"/"+p.Reason)
		}
	}
	// Execution receipts are appended in the background, so only the
	// counts are fixed, and the session's start and end.
	s2 := strings.Join(got, " ")
	if !strings.HasPrefix(s2, "SessionStart/ PreToolUse/cedar_allow ") || strings.Count(s2, "PreToolUse/cedar_allow") != 3 ||
		strings.Count(s2, "PostToolUseFailure/cancelled") != 1 || strings.Count(s2, "PostToolUseFailure/server_exited") != 2 ||
		!strings.HasSuffix(s2, "SessionEnd/") {
		t.Fatalf("chain = %s; want 3 allows, 1 cancelled, 2 server_exited", s2)
	}
}

// proposal is a PIC proposal for tool with args, backed by a canonical
// attestation signed with priv as key "k1".
func proposal(t *testing.T, priv ed25519.PrivateKey, tool string, args map[string]any) map[string]any {
	t.Helper()
	digest := func(v any) string {
		c, err := receipts.Canonicalize(v)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(c)
		return hex.EncodeToString(s[:])
	}
	claims := []any{map[string]any{"text": "approved by finance", "evidence": []any{"approval"}}}
	att, _ := receipts.Canonicalize(map[string]any{"attestation_version": "PIC-ATT/1.0", "tool": tool, "impact": "money",
		"args_digest": digest(args), "claims_digest": digest(claims), "provenance_ids": []any{"approval"}})
	return map[string]any{"protocol": "PIC/1.0", "intent": "pay", "impact": "money",
		"provenance": []any{map[string]any{"id": "approval", "trust": "trusted"}},
		"claims":     claims, "action": map[string]any{"tool": tool, "args": args},
		"evidence": []any{map[string]any{"id": "approval", "type": "sig", "ref": "inline:approval", "payload": string(att),
			"alg": "ed25519", "signature": base64.StdEncoding.EncodeToString(ed25519.Sign(priv, att)), "key_id": "k1"}}}
}

func TestRelayPIC(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	keys, err := pic.ParseKeyring([]byte(`{"trusted_keys":{"k1":"` + base64.StdEncoding.EncodeToString(pub) + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t)
	s := start(t, g, func(c *mcp.Config) { c.HighImpact = []string{"echo"}; c.Keys = keys })
	args := map[string]any{"amount": 500.0, "to": "ACME"}
	with := func(p map[string]any) map[string]any {
		a := map[string]any{"__pic": p, "__pic_request_id": "r1"}
		for k, v := range args {
			a[k] = v
		}
		return a
	}
	tests := []struct {
		name    string
		args    map[string]any
		allowed bool
	}{
		{"no proposal", args, false},
		{"valid proposal", with(proposal(t, priv, "echo", args)), true},
		{"untrusted signer", with(proposal(t, other, "echo", args)), false},
		{"proposal for another tool", with(proposal(t, priv, "write", args)), false},
		{"arguments not covered", with(proposal(t, priv, "echo", map[string]any{"amount": 5.0, "to": "ACME"})), false},
	}
	for i, tt := range tests {
		s.send(call(i+1, "echo", tt.args))
		m := s.recv()
		res := m["result"].(map[string]any)
		if allowed := res["isError"] != true; allowed != tt.allowed {
			t.Errorf("%s: result %v, allowed = %v, want %v", tt.name, m, allowed, tt.allowed)
			continue
		}
		if tt.allowed {
			// The server saw the arguments without the proposal.
			if text := res["content"].([]any)[0].(map[string]any)["text"]; text != `{"amount":500,"to":"ACME"}` {
				t.Errorf("%s: server got %v", tt.name, text)
			}
		}
	}
	s.close()
	var digests int
	for _, p := range chain(t, g) {
		if p.ProposalDigest != "" {
			digests++
		}
	}
	if digests != 1 {
		t.Fatalf("%d decision receipts carry a proposal digest, want 1 (the verified one)", digests)
	}
}

var _ = json.Marshal
