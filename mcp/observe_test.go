package mcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// In observe mode the relay forwards a call the policy denies, the deny is
// receipted as not enforced and the execution links it; the journal keeps
// the arguments. A call the relay cannot read is still refused.
func TestRelayObserve(t *testing.T) {
	dir := t.TempDir()
	if err := store.Open(dir).WriteConfig(store.Config{Observe: true, Journal: true}); err != nil {
		t.Fatal(err)
	}
	g := newGateAt(t, dir, noWrite)
	s := start(t, g, nil)
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	s.recv()
	target := filepath.Join(t.TempDir(), "effect")
	s.send(call(1, "write", map[string]any{"path": target, "content": "x"}))
	if m := s.recv(); m["id"] != 1.0 || m["result"].(map[string]any)["isError"] == true {
		t.Fatalf("observed write = %v, want it forwarded and answered", m)
	}
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":[1]}}`)
	if m := s.recv(); m["id"] != 2.0 || m["result"].(map[string]any)["isError"] != true {
		t.Fatalf("unreadable call = %v, want it refused in observe mode too", m)
	}
	if r := s.close(); r.code != 0 || r.err != nil {
		t.Fatalf("Run = %d, %v; want 0, nil", r.code, r.err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the observed write did not run: %v", err)
	}
	var deny, exec, refusal *receipts.Payload
	p := chain(t, g)
	lines, _ := g.Store().Receipts("s")
	var denyHash string
	for i := range p {
		switch r := &p[i]; {
		case r.HookEvent == receipts.PreToolUse && r.Reason == "cedar_deny":
			deny, denyHash = r, receipts.ChainHash(lines[i])
		case r.HookEvent == receipts.PostToolUse && strings.HasSuffix(r.ToolName, "__write"):
			exec = r
		case r.HookEvent == receipts.PreToolUse && r.Decision == receipts.Deny:
			refusal = r
		}
	}
	if deny == nil || deny.Enforced == nil || *deny.Enforced || exec == nil || exec.DecisionReceiptHash != denyHash ||
		refusal == nil || refusal.Enforced != nil {
		t.Fatalf("chain %+v; want the unenforced deny, its execution, and an enforced refusal", p)
	}
	found := false
	for e, err := range g.Store().Journal("s") {
		if err == nil && e.ReceiptHash == denyHash && strings.Contains(string(e.ToolInput), target) {
			found = true
		}
	}
	if !found {
		t.Errorf("journal has no entry with the write's arguments for %s", denyHash)
	}
}
