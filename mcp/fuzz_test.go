package mcp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/receipts"
)

// lockedBuffer is a bytes.Buffer safe for the relay's concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// FuzzRelayFraming feeds arbitrary client streams to the relay. It must
// never crash or stop early, everything it sends to the client must be
// one JSON message a line, and everything it sends to the server must be
// a line of the client's stream, byte for byte, that parses strictly and
// fits the line cap (or the JCS form of an allowed call stripped of its
// PIC proposal, or the relay's own: its tools/list, an error answering a
// response of the client's it refused), and no tools/call the policy
// forbids.
func FuzzRelayFraming(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}` + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{}}}` + "\r\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"write"}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n\n\n",
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call"}]` + "\n",
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"__pic":{},"x":"\ud800"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list"}` + "\n" + strings.Repeat("y", 300) + "\n",
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"e\xffcho\"}}\n",
	} {
		f.Add([]byte(s))
	}
	g := newGate(f, noWrite)
	// The fuzzed server never answers the relay's own tools/list.
	defer mcp.SetListWait(time.Millisecond)()
	f.Fuzz(func(t *testing.T, data []byte) {
		var client, server lockedBuffer
		serverOut, serverOutW := io.Pipe()
		cfg := mcp.Config{Gate: g, Server: "t", SessionID: "s", MaxLine: 256}
		err := mcp.Relay(t.Context(), cfg, bytes.NewReader(data), &client, &server, serverOut)
		serverOutW.Close()
		if err != nil {
			t.Fatalf("Relay = %v", err)
		}
		sc := bufio.NewScanner(&client.buf)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Fatalf("relay sent the client %q", sc.Bytes())
			}
		}
		for _, line := range bytes.SplitAfter(server.buf.Bytes(), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			body := bytes.TrimSpace(line)
			v, err := receipts.Parse(body)
			if err != nil {
				t.Fatalf("relay sent the server %q, which does not parse strictly: %v", line, err)
			}
			if len(line) > cfg.MaxLine && !bytes.Contains(data, body) {
				t.Fatalf("relay sent the server %d bytes, over the cap", len(line))
			}
			m, _ := v.(map[string]any)
			if id, _ := m["id"].(string); m["method"] == "tools/list" && strings.HasPrefix(id, "docket-mcp-") {
				continue // the relay's own tools/list
			}
			if e, ok := m["error"].(map[string]any); ok && m["method"] == nil && strings.HasPrefix(fmt.Sprint(e["message"]), "docket mcp: ") {
				continue // the relay's error for a response it refused
			}
			if m["method"] == "tools/call" {
				p, _ := m["params"].(map[string]any)
				if p["name"] == "write" {
					t.Fatalf("relay forwarded a forbidden call: %q", line)
				}
				if a, _ := p["arguments"].(map[string]any); a["__pic"] != nil {
					t.Fatalf("relay forwarded a PIC proposal: %q", line)
				}
			}
			if !bytes.Contains(data, body) {
				c, _ := receipts.Canonicalize(v)
				if !bytes.Equal(c, body) {
					t.Fatalf("relay sent the server %q, which is not in the client's stream", line)
				}
			}
		}
	})
}
