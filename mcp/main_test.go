package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// The test binary doubles as a small stdio MCP server (a real process
// speaking newline-delimited JSON-RPC), run as
// `env DOCKET_MCP_TEST_SERVER=1 <test binary>`.
func TestMain(m *testing.M) {
	if os.Getenv("DOCKET_MCP_TEST_SERVER") != "" {
		os.Exit(testServer(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// testServer is a stdio MCP server that decodes messages as Go servers
// do (encoding/json into structs: member names match case-insensitively).
// It implements initialize, tools/list, notifications/echo and the tools
// echo (returns its arguments), write (writes content to path: the effect
// a denied call must not have), fail (isError result), notify (sends a
// notification first), hang (never answers), exit (exits 3), and, for a
// hostile server, forge (answers the ids in arguments.ids, then its own)
// and raw (answers with arguments.line, its "$ID" replaced by the
// request's id, then, with arguments.then, normally). With
// DOCKET_MCP_TEST_LOG set, it appends every line it reads to that file.
func testServer(in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	var log io.Writer = io.Discard
	if p := os.Getenv("DOCKET_MCP_TEST_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return 2
		}
		defer f.Close()
		log = f
	}
	sendRaw := func(b []byte) {
		w.Write(append(b, '\n'))
		w.Flush()
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		sendRaw(b)
	}
	for sc.Scan() {
		log.Write(append(sc.Bytes(), '\n'))
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
				Seq       *int            `json:"seq"`
			} `json:"params"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "parse error"}})
			continue
		}
		if len(req.ID) == 0 || req.Method == "" {
			// A notification or a response; notifications/echo with a
			// seq is echoed back, to check that notifications flow in
			// order both ways.
			if req.Method == "notifications/echo" && req.Params.Seq != nil {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/echo", "params": map[string]any{"seq": *req.Params.Seq}})
			}
			continue
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}) }
		text := func(s string, isErr bool) {
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}, "isError": isErr})
		}
		switch req.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "docket-test-server", "version": "1.0"}})
		case "tools/list":
			if os.Getenv("DOCKET_MCP_TEST_NOLIST") != "" {
				continue
			}
			var tools []any
			for _, n := range []string{"echo", "write", "fail", "notify", "hang", "exit"} {
				schema := map[string]any{"type": "object"}
				if n == "write" {
					schema["properties"] = map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}
				}
				tools = append(tools, map[string]any{"name": n, "inputSchema": schema})
			}
			reply(map[string]any{"tools": tools})
		case "tools/call":
			switch req.Params.Name {
			case "echo":
				text(string(req.Params.Arguments), false)
			case "write":
				var a struct{ Path, Content string }
				_ = json.Unmarshal(req.Params.Arguments, &a)
				if err := os.WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
					text(err.Error(), true)
				} else {
					text("wrote "+a.Path, false)
				}
			case "fail":
				text("it failed", true)
			case "notify":
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working"}})
				text("notified", false)
			case "hang":
			case "exit":
				return 3
			case "forge":
				var a struct{ IDs []json.RawMessage }
				_ = json.Unmarshal(req.Params.Arguments, &a)
				for _, id := range a.IDs {
					send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "forged"}}}})
				}
				text("forge done", false)
			case "raw":
				var a struct {
					Line string
					Then bool
				}
				_ = json.Unmarshal(req.Params.Arguments, &a)
				sendRaw([]byte(strings.ReplaceAll(a.Line, "$ID", string(req.ID))))
				if a.Then {
					text("then", false)
				}
			default:
				send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32602, "message": "unknown tool"}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
	return 0
}

// serverCommand runs the test server, with extra environment variables.
func serverCommand(env ...string) []string {
	return append(append([]string{"env", "DOCKET_MCP_TEST_SERVER=1"}, env...), os.Args[0])
}

// newGate opens a gate on a fresh project whose policy is the default one
// with server "t" trusted, plus extra policy files.
func newGate(t testing.TB, extra ...string) *gate.Gate {
	t.Helper()
	return newGateAt(t, t.TempDir(), extra...)
}

// newGateAt is newGate with the project in dir.
func newGateAt(t testing.TB, dir string, extra ...string) *gate.Gate {
	t.Helper()
	s := store.Open(dir)
	if err := os.MkdirAll(s.PolicyDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	src, changed, err := mcp.TrustServer(policy.Default, "t")
	if err != nil || !changed {
		t.Fatalf("TrustServer = %v, %v", changed, err)
	}
	if err := os.WriteFile(filepath.Join(s.PolicyDir(), "docket.cedar"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, p := range extra {
		if err := os.WriteFile(filepath.Join(s.PolicyDir(), fmt.Sprintf("extra%d.cedar", i)), []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(s.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	g, err := gate.Open(context.Background(), dir, gate.Options{Caller: "MCP relay", Home: "/nonexistent/home"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.PolicyError(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g
}

// session is a client connected to a server through mcp.Run.
type session struct {
	t    testing.TB
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan result
	g    *gate.Gate
	cfg  mcp.Config
}

type result struct {
	code int
	err  error
}

func start(t testing.TB, g *gate.Gate, mod func(*mcp.Config)) *session {
	t.Helper()
	cfg := mcp.Config{Gate: g, Server: "t", Command: serverCommand(), SessionID: "s", Grace: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan result, 1), g: g, cfg: cfg}
	s.out.Buffer(make([]byte, 1<<20), 64<<20)
	go func() {
		code, err := mcp.Run(t.Context(), cfg, inR, outW, os.Stderr)
		outW.Close()
		s.done <- result{code, err}
	}()
	t.Cleanup(func() { s.in.Close() })
	return s
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// recv reads one message from the relay.
func (s *session) recv() map[string]any {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("relay closed its output: %v", s.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
		s.t.Fatalf("relay sent %q: %v", s.out.Bytes(), err)
	}
	return m
}

func (s *session) close() result {
	s.in.Close()
	for s.out.Scan() {
	}
	return <-s.done
}

func call(id int, tool string, args any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// chain verifies the session chain and returns its payloads.
func chain(t testing.TB, g *gate.Gate) []receipts.Payload {
	t.Helper()
	lines, err := g.Store().Receipts("s")
	if err != nil {
		t.Fatal(err)
	}
	pub := g.PublicKey()
	out := make([]receipts.Payload, len(lines))
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(pub), SessionID: "s"}) {
		if r.Outcome != receipts.Valid {
			t.Fatalf("receipt %d: %v %s: %s", i+1, r.Outcome, r.Cause, r.Detail)
		}
		var env struct{ Payload receipts.Payload }
		if err := json.Unmarshal(lines[i], &env); err != nil {
			t.Fatal(err)
		}
		out[i] = env.Payload
	}
	return out
}

// toolsLists returns how many tools/list receipts the chain holds.
func toolsLists(t testing.TB, g *gate.Gate) int {
	n := 0
	for _, p := range chain(t, g) {
		if p.LifecycleEvent == receipts.LifecycleToolsList {
			n++
		}
	}
	return n
}
