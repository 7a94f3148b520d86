package mcp_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/receipts"
)

// serverLog returns a server command whose test server logs every line it
// reads, and the log's path.
func serverLog(t *testing.T) ([]string, string) {
	path := filepath.Join(t.TempDir(), "server.log")
	return serverCommand("DOCKET_MCP_TEST_LOG=" + path), path
}

// TestRelayParserDifferential sends messages that the relay and a Go
// server (the test server decodes with encoding/json into structs, as
// Go MCP servers do) would read differently: each one must be refused,
// answered, never reach the server, and a tools/call among them must be
// denied with a signed receipt.
func TestRelayParserDifferential(t *testing.T) {
	g := newGate(t, noWrite)
	cmd, logPath := serverLog(t)
	s := start(t, g, func(c *mcp.Config) { c.Command = cmd })
	target := filepath.Join(t.TempDir(), "effect")
	write := `"arguments":{"path":"` + target + `","content":"x"}`
	tests := []struct {
		name, line string
		// answer: "deny" (a denied tool result with the line's id),
		// "null" (Invalid Request, id null), "error" (Invalid Request
		// with the line's id), "" (none: a notification)
		answer string
		signed bool // a deny is signed
	}{
		{"name and Name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"write",` + write + `}}`, "deny", true},
		{"Method hidden in a ping", `{"jsonrpc":"2.0","id":2,"method":"ping","Method":"tools/call","params":{"name":"write",` + write + `}}`, "deny", true},
		{"lone Method", `{"jsonrpc":"2.0","id":3,"Method":"tools/call","params":{"name":"write",` + write + `}}`, "deny", true},
		{"Params beside params", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"write",` + write + `}}`, "deny", true},
		{"Arguments beside arguments", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{},"Arguments":{"x":1}}}`, "deny", true},
		{"lone Arguments", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","Arguments":{"x":1}}}`, "deny", true},
		{"paramſ (U+017F)", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"paramſ":{"name":"write",` + write + `}}`, "deny", true},
		{"paramſ escaped", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"},"param\u017f":{"name":"write",` + write + `}}`, "deny", true},
		{"K (U+212A) in _meta", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","_meta":{"progressTo` + "\u212a" + `en":1}}}`, "deny", true},
		{"K (U+212A) in arguments", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"mask":1,"mas` + "\u212a" + `":2}}}`, "deny", true},
		{"ıd (U+0131) beside id", `{"jsonrpc":"2.0","ıd":11,"id":12,"method":"tools/call","params":{"name":"echo"}}`, "null", true},
		{"escaped duplicate name", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","na\u006de":"write"}}`, "deny", true},
		{"batch member METHOD", `[{"jsonrpc":"2.0","id":14,"METHOD":"tools/call","params":{"name":"write",` + write + `}}]`, "null", true},
		{"batch without a call", `[{"jsonrpc":"2.0","id":15,"method":"ping"}]`, "null", false},
		{"integer beyond 2^53 in arguments", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo","arguments":{"n":9007199254740993}}}`, "deny", true},
		{"integer beyond 2^53 nested", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"a":[{"n":-18446744073709551616}]}}}`, "deny", true},
		{"decimal that does not round-trip", `{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"echo","arguments":{"x":0.1000000000000000000001}}}`, "deny", true},
		{"negative zero", `{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo","arguments":{"x":-0}}}`, "deny", true},
		{"__proto__ in arguments", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","arguments":{"__proto__":{"x":1}}}}`, "deny", true},
		{"nested argument folds", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","arguments":{"o":{"mode":"a","Mode":"b"}}}}`, "deny", true},
		{"_meta and meta (encoding/json/v2 nocase)", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"echo","_meta":{},"meta":{"x":1}}}`, "deny", true},
		{"id 1e400", `{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{"name":"echo"}}`, "null", true},
		{"id object", `{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"echo"}}`, "null", true},
		{"id null", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`, "null", true},
		{"id with a fraction", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null", false},
		{"id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "null", false},
		{"request with a result", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"echo"},"result":{}}`, "deny", true},
		{"Result in a response", `{"jsonrpc":"2.0","id":"s1","result":{},"Result":{"x":1}}`, "", false},
		{"JSONRPC", `{"jsonrpc":"2.0","JSONRPC":"1.0","id":24,"method":"ping"}`, "error", false},
		{"notification with Method", `{"jsonrpc":"2.0","method":"notifications/initialized","Method":"notifications/cancelled"}`, "", false},
		{"two values on one line", `{"jsonrpc":"2.0","id":25,"method":"ping"}{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"write"}}`, "parse", false},
	}
	for _, tt := range tests {
		s.send(tt.line)
		if tt.answer == "" {
			continue
		}
		m := s.recv()
		var id any
		if err := json.Unmarshal([]byte(tt.line), &map[string]any{}); err == nil {
			var env map[string]any
			_ = json.Unmarshal([]byte(tt.line), &env)
			id = env["id"]
		}
		switch tt.answer {
		case "deny":
			res, ok := m["result"].(map[string]any)
			if !ok || res["isError"] != true || m["id"] != id {
				t.Errorf("%s: answer %v, want a denied tool result with id %v", tt.name, m, id)
			}
		case "null", "error", "parse":
			e, ok := m["error"].(map[string]any)
			code, wantID := -32600.0, any(nil)
			if tt.answer == "error" {
				wantID = id
			}
			if tt.answer == "parse" {
				code = -32700
			}
			if !ok || e["code"] != code || m["id"] != wantID {
				t.Errorf("%s: answer %v, want error %v with id %v", tt.name, m, code, wantID)
			}
		}
	}
	// The server saw none of it: the next call gets the next answer.
	s.send(call(100, "echo", map[string]any{}))
	if m := s.recv(); m["id"] != 100.0 {
		t.Fatalf("echo after the refusals = %v", m)
	}
	if r := s.close(); r.err != nil {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
	got, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if bytes.Contains(got, []byte(tt.line)) {
			t.Errorf("%s: the server received %s", tt.name, tt.line)
		}
	}
	// The server got the relay's error for the client's refused response
	// ("Result in a response"), the relay's own tools/list (the client
	// listed none) before the first call it forwards, and that call.
	if n := bytes.Count(got, []byte("\n")); n != 3 || !bytes.Contains(got, []byte(`"id":"s1","jsonrpc":"2.0"`)) {
		t.Errorf("the server received %d lines, want 3 (an error for s1, tools/list, the last echo):\n%s", n, got)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("a smuggled write ran: Stat = %v", err)
	}
	var denies, want int
	for _, p := range chain(t, g) {
		if p.Decision == "deny" {
			denies++
			if p.ToolName == "mcp__t__write" {
				t.Errorf("a deny names write: %+v; the relay never read write as the tool", p)
			}
		}
	}
	for _, tt := range tests {
		if tt.signed {
			want++
		}
	}
	if denies != want {
		t.Fatalf("chain has %d denies, want %d (one per refused tools/call)", denies, want)
	}
}

// TestRelayArgumentSchema: the write tool's inputSchema (from tools/list)
// names path and content; an argument that a Go server decodes as path
// without being "path" is refused, since the policy, which looks at
// "path", would not have seen it. The client never lists the tools: the
// relay asks the server itself before the first call.
func TestRelayArgumentSchema(t *testing.T) {
	dir := t.TempDir()
	forbidden := filepath.Join(dir, "forbidden")
	// The project is dir: an allowed write is one inside the project.
	g := newGateAt(t, dir, `@id("no-forbidden")
forbid (principal, action == Action::"mcp__t__write", resource) when { context.input like "*\"path\":\"*forbidden*" };`)
	s := start(t, g, nil)
	writeCall := func(id int, args string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"write","arguments":` + args + `}}`
	}
	for i, name := range []string{"Path", "PATH", "pa_th", "pAth"} {
		s.send(writeCall(1+i, `{"`+name+`":"`+forbidden+`","content":"x"}`))
		m := s.recv()
		res := m["result"].(map[string]any)
		if text := res["content"].([]any)[0].(map[string]any)["text"].(string); res["isError"] != true || !strings.Contains(text, "inputSchema") {
			t.Errorf("argument %s = %v, want a denial naming the inputSchema", name, m)
		}
	}
	s.send(writeCall(5, `{"path":"`+filepath.Join(dir, "ok")+`","Path":"`+forbidden+`","content":"x"}`))
	if m := s.recv(); m["result"].(map[string]any)["isError"] != true {
		t.Fatalf("path and Path = %v, want a denial", m)
	}
	s.send(writeCall(6, `{"path":"`+forbidden+`","content":"x"}`))
	if m := s.recv(); !strings.Contains(m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string), "no-forbidden") {
		t.Fatalf("path = %v, want the policy's denial", m)
	}
	s.send(writeCall(7, `{"path":"`+filepath.Join(dir, "ok")+`","content":"x"}`))
	if m := s.recv(); m["result"].(map[string]any)["isError"] == true {
		t.Fatalf("an allowed write = %v", m)
	}
	s.close()
	if _, err := os.Stat(forbidden); !os.IsNotExist(err) {
		t.Fatalf("a case variant of path reached the server: Stat = %v", err)
	}
	if lists := toolsLists(t, g); lists != 1 {
		t.Fatalf("%d tools/list receipts, want 1 (the relay's own list)", lists)
	}
}

// TestRelayToolsListUnanswered: a server that does not answer the relay's
// tools/list gets no call whose arguments the relay could not check.
func TestRelayToolsListUnanswered(t *testing.T) {
	defer mcp.SetListWait(100 * time.Millisecond)()
	g := newGate(t)
	s := start(t, g, func(c *mcp.Config) { c.Command = serverCommand("DOCKET_MCP_TEST_NOLIST=1") })
	s.send(call(1, "echo", map[string]any{"x": 1}))
	m := s.recv()
	res := m["result"].(map[string]any)
	if text := res["content"].([]any)[0].(map[string]any)["text"].(string); res["isError"] != true || !strings.Contains(text, "did not answer the relay's tools/list") {
		t.Fatalf("echo = %v, want a denial: the tool list was not read", m)
	}
	s.close()
}

// TestRelayForgedResponses: a server answers the ids of calls it never
// received (one the gate is about to deny, one never sent) and answers a
// call twice. The client gets one answer per request, the relay's own for
// the denied call, and no execution is receipted for a call never
// forwarded.
func TestRelayForgedResponses(t *testing.T) {
	g := newGate(t, noWrite)
	s := start(t, g, nil)
	s.send(call(1, "forge", map[string]any{"ids": []any{1, 2, 99, "x"}}))
	m := s.recv()
	if m["id"] != 1.0 || m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "forged" {
		t.Fatalf("first answer = %v, want the server's first answer to 1", m)
	}
	s.send(call(2, "write", map[string]any{"path": filepath.Join(t.TempDir(), "x"), "content": "x"}))
	if m := s.recv(); m["id"] != 2.0 || m["result"].(map[string]any)["_meta"] == nil {
		t.Fatalf("answer to the denied call = %v, want the relay's denial", m)
	}
	s.send(call(3, "echo", map[string]any{"a": 1}))
	if m := s.recv(); m["id"] != 3.0 {
		t.Fatalf("answer = %v, want 3's (the forged answers and the second answer to 1 dropped)", m)
	}
	s.close()
	var execs []string
	for _, p := range chain(t, g) {
		if p.HookEvent == receipts.PostToolUse || p.HookEvent == receipts.PostToolUseFailure {
			execs = append(execs, p.ToolName)
		}
	}
	if strings.Join(execs, " ") != "mcp__t__forge mcp__t__echo" && strings.Join(execs, " ") != "mcp__t__echo mcp__t__forge" {
		t.Fatalf("executions = %v, want forge and echo only", execs)
	}
}

// TestRelayHostileResponses: responses to a call that parsers read
// differently are not relayed; the client gets an error for the call, and
// the execution receipt records invalid_response with the hash of that
// error, which is what the client read.
func TestRelayHostileResponses(t *testing.T) {
	g := newGate(t)
	s := start(t, g, nil)
	ok := `"content":[{"type":"text","text":"ok"}]`
	tests := []struct {
		name, line string
		relayed    bool // the line reaches the client as is
		then       bool // the server answers normally after the line
	}{
		{"result and Result", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `},"Result":{"content":[]}}`, false, false},
		{"lone Result", `{"jsonrpc":"2.0","id":$ID,"Result":{` + ok + `}}`, false, false},
		{"isError and IsError", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `,"isError":false,"IsError":true}}`, false, false},
		{"stray Method", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `},"Method":"sampling/createMessage"}`, false, false},
		{"duplicate result", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `},"result":{"content":[]}}`, false, false},
		{"__proto__ in the result", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `,"__proto__":{"isError":true}}}`, false, false},
		{"result and error", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `},"error":{"code":1,"message":"x"}}`, false, false},
		{"result not an object", `{"jsonrpc":"2.0","id":$ID,"result":[1]}`, false, false},
		{"folds in structured content", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `,"structuredContent":{"v":1,"V":2}}}`, false, false},
		{"ID beside id", `{"jsonrpc":"2.0","id":$ID,"ID":"other","result":{` + ok + `}}`, false, false},
		{"not JSON", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `}} trailing`, false, true},
		{"two messages on a line", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `}}{"jsonrpc":"2.0","id":$ID,"result":{}}`, false, true},
		{"batch of responses", `[{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `}}]`, false, true},
		{"integer beyond 2^53 in the result", `{"jsonrpc":"2.0","id":$ID,"result":{` + ok + `,"structuredContent":{"n":9007199254740993}}}`, true, false},
		{"lone surrogate in the result", `{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"\ud800"}]}}`, true, false},
	}
	for i, tt := range tests {
		id := i + 1
		s.send(call(id, "raw", map[string]any{"line": tt.line, "then": tt.then}))
		m := s.recv()
		if m["id"] != float64(id) {
			t.Fatalf("%s: answer %v, want id %d", tt.name, m, id)
		}
		e, isErr := m["error"].(map[string]any)
		switch {
		case tt.relayed && isErr, !tt.relayed && tt.then && (isErr || m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "then"):
			t.Errorf("%s: answer %v", tt.name, m)
		case !tt.relayed && !tt.then && (!isErr || !strings.Contains(e["message"].(string), "not relayed")):
			t.Errorf("%s: answer %v, want the relay's error", tt.name, m)
		}
	}
	s.close()
	lines, _ := g.Store().Receipts("s")
	n := 0
	for _, p := range chain(t, g) {
		if p.ToolName != "mcp__t__raw" || p.HookEvent == receipts.PreToolUse {
			continue
		}
		n++
		if p.Reason == mcp.ReasonInvalidResponse && (p.HookEvent != receipts.PostToolUseFailure || !strings.HasPrefix(p.ToolOutputHash, "sha256:")) {
			t.Errorf("execution %+v, want PostToolUseFailure with the hash of the error sent", p)
		}
	}
	if n != len(tests) || len(lines) == 0 {
		t.Fatalf("%d executions of raw, want %d", n, len(tests))
	}
}

// TestRelayLongResponse: a response longer than the relay holds in
// memory is spooled, relayed whole and receipted with the hash of the
// bytes the client got.
func TestRelayLongResponse(t *testing.T) {
	defer mcp.SetServerMaxLine(1 << 10)()
	g := newGate(t)
	s := start(t, g, nil)
	big := strings.Repeat("y", 5000)
	line := `{"jsonrpc":"2.0","id":$ID,"result":{"content":[{"type":"text","text":"` + big + `"}],"isError":true}}`
	s.send(call(1, "raw", map[string]any{"line": line}))
	if !s.out.Scan() {
		t.Fatal("no answer")
	}
	got := append(s.out.Bytes(), '\n')
	if want := strings.ReplaceAll(line, "$ID", "1") + "\n"; string(got) != want {
		t.Fatalf("the client got %d bytes, want the server's %d", len(got), len(want))
	}
	s.close()
	sum := sha256.Sum256(got)
	var found bool
	for _, p := range chain(t, g) {
		if p.HookEvent == receipts.PostToolUseFailure && p.ToolName == "mcp__t__raw" {
			found = true
			if p.ToolOutputHash != "raw-sha256:"+hex.EncodeToString(sum[:]) {
				t.Fatalf("tool_output_hash = %s, want raw-sha256 of the line", p.ToolOutputHash)
			}
		}
	}
	if !found {
		t.Fatal("no execution receipt for the long response (isError: PostToolUseFailure)")
	}
}

// TestRunProcessGroup: servers started through a wrapper that leaves a
// child holding their stdout (sh -c '… &', as npx and uvx can) still stop
// once the client is gone, and the session ends with its session_end.
func TestRunProcessGroup(t *testing.T) {
	tests := []struct {
		name, script string
	}{
		{"child in the group", `sleep 60 & exec "$@"`},
		{"child that ignores SIGTERM", `trap "" TERM; (trap "" TERM; sleep 60) & exec "$@"`},
		{"child outside the group", `setsid sleep 60 & echo $! > "$PIDFILE"; exec "$@"`},
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is missing")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t)
			pidfile := filepath.Join(t.TempDir(), "pid")
			t.Setenv("PIDFILE", pidfile)
			t.Cleanup(func() {
				if b, err := os.ReadFile(pidfile); err == nil {
					killPID(strings.TrimSpace(string(b)))
				}
			})
			s := start(t, g, func(c *mcp.Config) {
				c.Command = append([]string{"sh", "-c", tt.script, "sh"}, serverCommand()...)
				c.Grace = 200 * time.Millisecond
			})
			s.send(call(1, "echo", map[string]any{}))
			if m := s.recv(); m["id"] != 1.0 {
				t.Fatalf("echo = %v", m)
			}
			s.close()
			p := chain(t, g)
			if last := p[len(p)-1]; last.HookEvent != receipts.SessionEnd {
				t.Fatalf("last receipt %+v, want session_end", last)
			}
		})
	}
}

// killPID kills a process a test started, by its id.
func killPID(pid string) {
	if n, err := strconv.Atoi(pid); err == nil && n > 0 {
		_ = syscall.Kill(n, syscall.SIGKILL)
	}
}
