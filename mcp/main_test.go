package mcp_test

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// testServer implements initialize, tools/list, notifications/echo and the
// tools echo (returns
// its arguments), write (writes content to path: the effect a denied call
// must not have), fail (isError result), notify (sends a notification
// first), hang (never answers) and exit (exits 3).
func testServer(in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	send := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		w.Flush()
	}
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
				Seq       *int           `json:"seq"`
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
			var tools []any
			for _, n := range []string{"echo", "write", "fail", "notify", "hang", "exit"} {
				tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
			}
			reply(map[string]any{"tools": tools})
		case "tools/call":
			switch req.Params.Name {
			case "echo":
				b, _ := json.Marshal(req.Params.Arguments)
				text(string(b), false)
			case "write":
				path, _ := req.Params.Arguments["path"].(string)
				content, _ := req.Params.Arguments["content"].(string)
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					text(err.Error(), true)
				} else {
					text("wrote "+path, false)
				}
			case "fail":
				text("it failed", true)
			case "notify":
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working"}})
				text("notified", false)
			case "hang":
			case "exit":
				return 3
			default:
				send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32602, "message": "unknown tool"}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
	return 0
}

// serverCommand runs the test server.
func serverCommand() []string {
	return []string{"env", "DOCKET_MCP_TEST_SERVER=1", os.Args[0]}
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
	eng, err := gate.LoadPolicy(s)
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	return &gate.Gate{Store: s, Engine: eng, Key: priv, Home: "/nonexistent/home"}
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
	lines, err := g.Store.Receipts("s")
	if err != nil {
		t.Fatal(err)
	}
	pub := g.Key.Public().(ed25519.PublicKey)
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
