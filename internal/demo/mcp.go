package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/mcp"
)

// mcpStep shows docket mcp: docket init -mcp puts a stdio MCP server (the
// demo's own notes server, a real process) behind the gate, then an MCP
// client's calls go through it: saving a note is allowed and runs;
// deleting every note is named high impact (-high-impact) and, with no
// verified PIC proposal, denied before the server sees it. The session's
// receipts verify like the hooks'.
func (d *demoRun) mcpStep(ctx context.Context) error {
	d.step("8. An MCP server behind docket mcp: one call allowed, one denied")
	notes := filepath.Join(d.dir, "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(notes, "keep.md"), []byte("an existing note\n"), 0o644); err != nil {
		return err
	}
	config := filepath.Join(d.dir, "mcp.json")
	out, stderr, code, err := d.docket(nil, "init", "-command", d.self, "-mcp", "notes", "-mcp-config", config,
		"--", d.self, "demo-mcp-server", notes)
	if err != nil || code != 0 {
		return fmt.Errorf("docket init -mcp: exit %d: %v %s", code, err, stderr)
	}
	for line := range strings.Lines(out) {
		if strings.Contains(line, "docket mcp") {
			d.say("%s", strings.TrimSpace(strings.ReplaceAll(line, d.dir+"/", "")))
		}
	}
	entries, err := mcp.ReadClient(config)
	if err != nil || !entries["notes"].Gated() {
		return fmt.Errorf("docket init -mcp did not gate the notes server: %v", err)
	}
	// The client: the MCP client config's command, with a session name and
	// the delete tool marked high impact.
	args := append([]string{"mcp", "-session", "demo-mcp", "-high-impact", "delete_notes"}, entries["notes"].Args[1:]...)
	d.say("the client runs: docket mcp -name notes -session demo-mcp -high-impact delete_notes ... -- docket demo-mcp-server notes/")
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo-client","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"save_note","arguments":{"name":"todo","text":"ship it"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"delete_notes","arguments":{}}}`,
	}
	out, stderr, code, err = d.docket([]byte(strings.Join(msgs, "\n")+"\n"), args...)
	if err != nil || code != 0 {
		return fmt.Errorf("docket mcp: exit %d: %v %s", code, err, stderr)
	}
	answers := map[float64]string{}
	for line := range strings.Lines(out) {
		var m struct {
			ID     float64
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if json.Unmarshal([]byte(line), &m) != nil || len(m.Result.Content) == 0 {
			continue
		}
		verdict := "ran"
		if m.Result.IsError {
			verdict = "DENIED"
		}
		answers[m.ID] = verdict + ": " + m.Result.Content[0].Text
	}
	d.say("tools/call save_note   -> %s", answers[2])
	d.say("tools/call delete_notes -> %s", answers[3])
	if _, err := os.Stat(filepath.Join(notes, "todo.md")); err != nil {
		return fmt.Errorf("the allowed save_note did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(notes, "keep.md")); err != nil {
		return fmt.Errorf("the denied delete_notes ran: %v", err)
	}
	if !strings.HasPrefix(answers[3], "DENIED") {
		return fmt.Errorf("delete_notes was not denied: %q", answers[3])
	}
	d.say("notes/todo.md was written; notes/keep.md is still there: the denied call never reached the server")
	key := filepath.Join(d.project, ".docket", "issuer.key")
	chain := filepath.Join(d.project, ".docket", "sessions", "demo-mcp.jsonl")
	out, _, code, err = d.docket(nil, "verify", "-key-file", key, chain)
	if err != nil || code != 0 {
		return fmt.Errorf("the MCP session did not verify (exit %d): %v\n%s", code, err, out)
	}
	d.say("docket verify .docket/sessions/demo-mcp.jsonl: %s", strings.TrimSpace(strings.ReplaceAll(out, d.project+"/", "")))
	return nil
}

// NotesServer is the demo's stdio MCP server (docket demo-mcp-server DIR,
// not listed in the usage), reading requests from stdin until it ends:
// tools save_note (writes DIR/NAME.md) and delete_notes (removes every
// note in DIR).
func NotesServer(dir string, stdin io.Reader, stdout io.Writer) {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(stdout)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage
			Method string
			Params struct {
				Name      string
				Arguments struct{ Name, Text string }
			}
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue
		}
		var result any
		text := func(s string, isErr bool) any {
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isErr}
		}
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "docket-demo-notes", "version": "1"}}
		case "tools/list":
			result = map[string]any{"tools": []any{
				map[string]any{"name": "save_note", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "delete_notes", "inputSchema": map[string]any{"type": "object"}},
			}}
		case "tools/call":
			switch req.Params.Name {
			case "save_note":
				name := filepath.Base(req.Params.Arguments.Name) + ".md"
				if err := os.WriteFile(filepath.Join(dir, name), []byte(req.Params.Arguments.Text+"\n"), 0o644); err != nil {
					result = text(err.Error(), true)
				} else {
					result = text("saved "+name, false)
				}
			case "delete_notes":
				files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
				for _, f := range files {
					os.Remove(f)
				}
				result = text(fmt.Sprintf("deleted %d notes", len(files)), false)
			default:
				result = text("unknown tool", true)
			}
		default:
			enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			continue
		}
		enc.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}
