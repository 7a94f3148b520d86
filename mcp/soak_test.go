package mcp_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoak relays 100,000 mixed messages (5,000 with -short) from a client
// that never waits for an answer before sending the next: tools/call
// allowed and denied, tools/list, unknown methods, notifications both ways
// and malformed lines. (Calls are 6% of the messages: with more, the
// calls in flight outgrow the tail of the chain the store searches for an
// execution's decision, and the test measures that search instead.) Every request must be answered exactly once, and
// the server's answers (responses and echoed notifications) must arrive in
// the order the client sent their messages.
func TestSoak(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 5_000
	}
	// The store is on tmpfs when there is one: this test is about the
	// relay's messages, and 20,000 fsyncs on a shared disk take minutes.
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		tmp, err := os.MkdirTemp("/dev/shm", "docket-mcp-soak")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tmp) })
		dir = tmp
	}
	g := newGateAt(t, dir, noWrite)
	s := start(t, g, nil)
	type sent struct {
		kind string // "server": answered by the server, "relay": by the relay, "none"
		key  string // id or notification seq
	}
	rng := rand.New(rand.NewPCG(1, 2))
	plan := make([]sent, n)
	lines := make([]string, n)
	out := t.TempDir()
	for i := range n {
		switch r := rng.IntN(100); {
		case r < 4:
			lines[i] = call(i, "echo", map[string]any{"i": i, "s": strings.Repeat("x", rng.IntN(200))})
			plan[i] = sent{"server", fmt.Sprint(i)}
		case r < 5:
			lines[i] = call(i, "write", map[string]any{"path": filepath.Join(out, fmt.Sprint(i)), "content": "x"})
			plan[i] = sent{"relay", fmt.Sprint(i)}
		case r < 20:
			lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":"l%d","method":"tools/list"}`, i)
			plan[i] = sent{"server", fmt.Sprintf("l%d", i)}
		case r < 25:
			lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
			plan[i] = sent{"server", fmt.Sprint(i)}
		case r < 26:
			lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","name":"x"}}`, i)
			plan[i] = sent{"relay", fmt.Sprint(i)}
		case r < 28:
			lines[i] = `{"jsonrpc":"2.0",` // malformed: answered with id null
			plan[i] = sent{"relay", "null"}
		case r < 30:
			lines[i] = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
			plan[i] = sent{"none", ""}
		default:
			lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/echo","params":{"seq":%d}}`, i)
			plan[i] = sent{"server", fmt.Sprintf("n%d", i)}
		}
	}
	go func() {
		for _, l := range lines {
			s.send(l)
		}
		s.in.Close()
	}()
	var fromServer, fromRelay []string
	seen := map[string]int{}
	for s.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct{ Seq int }
			Result struct {
				Meta map[string]any `json:"_meta"`
			}
			Error *struct{ Code int }
		}
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
			t.Fatalf("relay sent %q: %v", s.out.Bytes(), err)
		}
		var key string
		switch {
		case m.Method == "notifications/echo":
			key = fmt.Sprintf("n%d", m.Params.Seq)
		default:
			var id any
			_ = json.Unmarshal(m.ID, &id)
			key = fmt.Sprint(id)
			if id == nil {
				key = "null"
			}
		}
		seen[key]++
		if m.Result.Meta != nil || key == "null" || m.Error != nil && m.Error.Code == -32700 {
			fromRelay = append(fromRelay, key)
		} else {
			fromServer = append(fromServer, key)
		}
	}
	r := <-s.done
	if r.err != nil || r.code != 0 {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
	var wantServer, wantRelay []string
	for _, p := range plan {
		switch p.kind {
		case "server":
			wantServer = append(wantServer, p.key)
		case "relay":
			wantRelay = append(wantRelay, p.key)
		}
	}
	if len(fromServer) != len(wantServer) || len(fromRelay) != len(wantRelay) {
		t.Fatalf("got %d server and %d relay answers, want %d and %d", len(fromServer), len(fromRelay), len(wantServer), len(wantRelay))
	}
	for i := range wantServer {
		if fromServer[i] != wantServer[i] {
			t.Fatalf("server answer %d is for %s, want %s: lost, duplicated or reordered", i, fromServer[i], wantServer[i])
		}
	}
	for i := range wantRelay {
		if fromRelay[i] != wantRelay[i] {
			t.Fatalf("relay answer %d is for %s, want %s", i, fromRelay[i], wantRelay[i])
		}
	}
	for k, c := range seen {
		if c != 1 && k != "null" {
			t.Fatalf("%s answered %d times", k, c)
		}
	}
	p := chain(t, g)
	var calls, execs int
	for _, r := range p {
		switch r.HookEvent {
		case "PreToolUse":
			calls++
		case "PostToolUse", "PostToolUseFailure":
			execs++
		}
	}
	var wantCalls, wantExecs int
	for i, p := range plan {
		if strings.Contains(lines[i], `"tools/call"`) {
			wantCalls++
			if p.kind == "server" {
				wantExecs++
			}
		}
	}
	if calls != wantCalls || execs != wantExecs {
		t.Fatalf("chain has %d decisions and %d executions, want %d and %d", calls, execs, wantCalls, wantExecs)
	}
	t.Logf("%d messages: %d server answers, %d relay answers, %d receipts", n, len(fromServer), len(fromRelay), len(p))
}
