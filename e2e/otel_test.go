package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/otelcoltest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// TestOTelExport runs a docket mcp session (a tools/call allowed and one
// denied) and two Claude Code calls through docket hook (one allowed and
// run, one denied), then docket sync against a real docket-log, all with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a real OpenTelemetry Collector. The
// collector must have received exactly one span per tool call: the
// relay's two, live, and sync's two, once proven, with the GenAI and MCP
// attributes, the decision, the policy ids, and the receipt hashes and
// leaf indexes of the receipts in the project's chains and proofs.
func TestOTelExport(t *testing.T) {
	col := otelcoltest.Start(t)
	dir := t.TempDir()
	project, notes, home := filepath.Join(dir, "project"), filepath.Join(dir, "notes"), filepath.Join(dir, "home")
	for _, d := range []string{project, notes, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "HOME="+home, "CLAUDE_PROJECT_DIR="+project, "DOCKET_AUTOSYNC=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+col.Endpoint, "OTEL_SERVICE_NAME=docket-e2e")
	run := func(wd, stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = wd, env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil && !(args[1] == "hook" && strings.Contains(stdin, "rm -rf")) {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	logURL, vkey := startLog(t, dir, env, "100ms")
	run(project, "", "docket", "init", "-log", logURL, "-log-key", vkey,
		"-command", "docket", "-mcp", "notes", "-mcp-config", filepath.Join(dir, "mcp.json"), "--", "docket", "demo-mcp-server", notes)

	// The relay: save_note runs, delete_notes (high impact, no PIC
	// proposal) is denied. No background sync: docket sync below proves
	// these receipts too, and must not export them again.
	client := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"save_note","arguments":{"name":"todo","text":"ship it"}}}
{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"delete_notes","arguments":{}}}
`
	out := run(project, client, "docket", "mcp", "-dir", project, "-name", "notes", "-session", "s1", "-sync-every", "0",
		"-high-impact", "delete_notes", "--", "docket", "demo-mcp-server", notes)
	if !strings.Contains(out, "saved todo.md") || !strings.Contains(out, "Docket denied this tool call") {
		t.Fatalf("docket mcp answered:\n%s", out)
	}

	// The hooks: an allowed call that runs, and a denied one.
	event := func(name, id, command string) string {
		b, _ := json.Marshal(map[string]any{"session_id": "c1", "cwd": project, "hook_event_name": name,
			"tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": id,
			"tool_response": map[string]any{"stdout": "a\n"}})
		return string(b)
	}
	run(project, event("PreToolUse", "toolu_ls", "ls"), "docket", "hook", "pre")
	run(project, event("PostToolUse", "toolu_ls", "ls"), "docket", "hook", "post")
	if out := run(project, event("PreToolUse", "toolu_rm", "rm -rf /"), "docket", "hook", "pre"); !strings.Contains(out, "denied") {
		t.Fatalf("docket hook pre of rm -rf / answered %q", out)
	}
	if out := run(project, "", "docket", "sync", "-dir", project); !strings.Contains(out, "stored") {
		t.Fatalf("docket sync: %s", out)
	}

	spans, err := col.Spans(t.Context(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 4 {
		for _, s := range spans {
			t.Logf("%s %v", s.Name, s.Attrs)
		}
		t.Fatalf("the collector received %d spans, want 4 (one per tool call)", len(spans))
	}
	byName := map[string]otelcoltest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		if s.Resource["service.name"] != "docket-e2e" {
			t.Errorf("span %s: service.name = %v, want docket-e2e", s.Name, s.Resource["service.name"])
		}
	}

	// What the project's chains and proofs say about each receipt.
	st := store.Open(project)
	type fact struct {
		hash  string
		index int64
	}
	facts := func(session string) map[string]fact { // by hook_event + " " + tool_use_id
		t.Helper()
		recs, err := st.Receipts(session)
		if err != nil {
			t.Fatal(err)
		}
		proofs, err := st.Proofs(session)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]fact{}
		for _, r := range recs {
			var env struct {
				Payload receipts.Payload `json:"payload"`
			}
			if err := json.Unmarshal(r, &env); err != nil {
				t.Fatal(err)
			}
			h, _ := receipts.Hash(r)
			f := fact{hash: h, index: -1}
			if p, ok := proofs.Get(env.Payload.Sequence); ok {
				if m := regexp.MustCompile(`(?m)^index (\d+)$`).FindSubmatch(p); m != nil {
					f.index, _ = strconv.ParseInt(string(m[1]), 10, 64)
				}
			}
			m[env.Payload.HookEvent+" "+env.Payload.ToolUseID] = f
		}
		return m
	}
	relay, hooks := facts("s1"), facts("c1")

	check := func(name string, want map[string]any) {
		t.Helper()
		s, ok := byName[name]
		if !ok {
			t.Errorf("no span named %q among %v", name, slices.Collect(func(yield func(string) bool) {
				for n := range byName {
					if !yield(n) {
						return
					}
				}
			}))
			return
		}
		for k, v := range want {
			got := s.Attrs[k]
			if gs, ok := got.([]any); ok {
				if ws, ok := v.([]any); !ok || !slices.Equal(gs, ws) {
					t.Errorf("span %s: %s = %v, want %v", name, k, got, v)
				}
				continue
			}
			if got != v {
				t.Errorf("span %s: %s = %#v, want %#v", name, k, got, v)
			}
		}
	}
	check("tools/call save_note", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "save_note", "gen_ai.tool.call.id": "jsonrpc:2",
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "2", "mcp.session.id": "s1", "network.transport": "pipe",
		"docket.session.id": "s1", "docket.tool.name": "mcp__notes__save_note", "docket.decision": "allow",
		"docket.receipt.hash":           relay["PreToolUse jsonrpc:2"].hash,
		"docket.execution.receipt.hash": relay["PostToolUse jsonrpc:2"].hash,
		"error.type":                    nil,
	})
	check(`tools/call delete_notes`, map[string]any{
		"gen_ai.tool.name": "delete_notes", "jsonrpc.request.id": "three", "docket.decision": "deny",
		"docket.policy_ids": []any{"mcp-high-impact-needs-pic"}, "error.type": "tool_error",
		"docket.receipt.hash": relay[`PreToolUse jsonrpc:"three"`].hash, "docket.execution.receipt.hash": nil,
	})
	if s := byName["tools/call save_note"]; s.Kind != 3 || s.StatusCode != 0 {
		t.Errorf("relay span kind, status = %d, %d, want 3 (CLIENT), 0 (unset)", s.Kind, s.StatusCode)
	}
	if s := byName["tools/call delete_notes"]; s.StatusCode != 2 {
		t.Errorf("denied relay span status = %d, want 2 (ERROR)", s.StatusCode)
	}
	var ran, denied otelcoltest.Span
	for _, s := range spans {
		switch s.Attrs["gen_ai.tool.call.id"] {
		case "toolu_ls":
			ran = s
		case "toolu_rm":
			denied = s
		}
	}
	byName = map[string]otelcoltest.Span{"ran": ran, "denied": denied}
	for _, f := range []fact{hooks["PreToolUse toolu_ls"], hooks["PostToolUse toolu_ls"], hooks["PreToolUse toolu_rm"]} {
		if f.index < 0 {
			t.Fatalf("a hook receipt has no proof: %+v", hooks)
		}
	}
	check("ran", map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "Bash", "gen_ai.conversation.id": "c1",
		"gen_ai.agent.name": "claude-code", "docket.session.id": "c1", "docket.decision": "allow",
		"docket.receipt.hash": hooks["PreToolUse toolu_ls"].hash, "docket.log.index": hooks["PreToolUse toolu_ls"].index,
		"docket.execution.receipt.hash": hooks["PostToolUse toolu_ls"].hash,
		"docket.execution.log.index":    hooks["PostToolUse toolu_ls"].index,
		"mcp.method.name":               nil, "error.type": nil,
	})
	check("denied", map[string]any{
		"gen_ai.tool.name": "Bash", "docket.decision": "deny", "error.type": "tool_error",
		"docket.receipt.hash": hooks["PreToolUse toolu_rm"].hash, "docket.log.index": hooks["PreToolUse toolu_rm"].index,
	})
	if ran.Name != "execute_tool Bash" || ran.Kind != 1 {
		t.Errorf("sync span name, kind = %q, %d, want %q, 1 (INTERNAL)", ran.Name, ran.Kind, "execute_tool Bash")
	}
	if ids, _ := denied.Attrs["docket.policy_ids"].([]any); len(ids) == 0 {
		t.Errorf("denied span: docket.policy_ids = %v, want the policies that denied", denied.Attrs["docket.policy_ids"])
	}
}
