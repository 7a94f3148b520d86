package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// Bounds on the input schemas the relay keeps from tools/list results.
const (
	maxSchemaTools = 4096    // tools
	maxSchemaBytes = 8 << 20 // JCS bytes, all tools together
)

// tools is what the server's tools/list results said: each tool's input
// schema (the latest list wins) and the hashes of the lists receipted.
type tools struct {
	mu      sync.Mutex // guards schemas, size and listed
	schemas map[string]*toolSchema
	size    int
	// listed is set once a tools/list result was read, and cleared when
	// the server says its list changed.
	listed bool

	// seen holds the hashes of the lists already receipted; only the
	// server loop uses it.
	seen map[string]bool
}

// toolSchema is one tool's inputSchema, and the member names it gives.
type toolSchema struct {
	raw   json.RawMessage // JCS
	names map[string]bool
	folds map[string]string // foldKey → a name
}

// newToolSchema reads an inputSchema: every name under any "properties"
// anywhere in it is a member name the server's decoder may look for.
func newToolSchema(v map[string]any) (*toolSchema, error) {
	raw, err := strictjson.Canonicalize(v)
	if err != nil {
		return nil, err
	}
	s := &toolSchema{raw: raw, names: map[string]bool{}, folds: map[string]string{}}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["properties"].(map[string]any); ok {
				for n := range p {
					s.names[n] = true
					s.folds[foldKey(n)] = n
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return s, nil
}

// inputSchema returns the inputSchema (JCS) the server's latest tools/list
// gave tool, or nil.
func (r *relay) inputSchema(tool string) json.RawMessage {
	r.tools.mu.Lock()
	defer r.tools.mu.Unlock()
	if s := r.tools.schemas[tool]; s != nil {
		return s.raw
	}
	return nil
}

// checkArguments returns why parsers could read a call's arguments
// differently, or "": a member, at any depth, that folds like a name the
// tool's inputSchema gives without being it is read as that name by the
// case-insensitive decoders a server decodes arguments with (Go's
// encoding/json into the tool's input struct).
func (t *tools) checkArguments(tool string, args map[string]any) string {
	t.mu.Lock()
	s := t.schemas[tool]
	t.mu.Unlock()
	if s == nil {
		return ""
	}
	var why string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if why != "" {
					return
				}
				if !s.names[k] {
					if n, ok := s.folds[foldKey(k)]; ok {
						why = "argument " + quote(k) + " is read as " + quote(n) + ", which the tool's inputSchema names, by case-insensitive decoders"
						return
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(args)
	return why
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// list reads the result of a tools/list (msg, parsed strictly into v
// when it could be) before it is relayed: the tools' input schemas are
// kept, so that the client's next call is checked against them. It
// returns the hash the list is receipted by (toolsListed): of its tools,
// or of the message's bytes when the relay could not parse it strictly;
// "" for a result without tools.
func (t *tools) list(v map[string]any, sum string, first bool) string {
	if v == nil {
		return sum
	}
	result, _ := v["result"].(map[string]any)
	list, ok := result["tools"].([]any)
	if !ok {
		return ""
	}
	c, err := strictjson.Canonicalize(list)
	if err != nil {
		return ""
	}
	t.keep(list, first)
	return sha256Ref(c)
}

// isListed reports whether the relay read a tools/list result since the
// server last said its list changed.
func (t *tools) isListed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listed
}

// changed notes the server's notifications/tools/list_changed.
func (t *tools) changed() {
	t.mu.Lock()
	t.listed = false
	t.mu.Unlock()
}

// listWait bounds the wait for the server's answer to the relay's own
// tools/list, and maxListPages the pages it reads.
var listWait = 5 * time.Second

const maxListPages = 16

// fetchTools asks the server for its tools/list when the relay has read
// none yet, so that a call's arguments are checked against its tool's
// inputSchema even when the client never listed the tools (a hostile
// client would not). The response is read, receipted, and not relayed.
// It returns why it could not, when the server did not answer in time:
// the call is then denied.
func (r *relay) fetchTools(ctx context.Context, call map[string]any) string {
	if r.tools.isListed() {
		return ""
	}
	// A 2026-07-28 request names the protocol version (and the client) in
	// its _meta: the relay's says the same.
	params := map[string]any{}
	if meta, ok := call["_meta"].(map[string]any); ok {
		m := map[string]any{}
		for k, v := range meta {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				m[k] = v
			}
		}
		if len(m) > 0 {
			params["_meta"] = m
		}
	}
	cursor := ""
	for page := range maxListPages {
		if cursor != "" {
			params["cursor"] = cursor
		}
		r.listSeq++
		id, _ := json.Marshal(fmt.Sprintf("docket-mcp-%s-tools-list-%d", r.nonce, r.listSeq))
		f := &flight{method: "tools/list", own: true, cursor: page > 0, done: make(chan struct{})}
		if err := r.flights.add(string(id), f); err != nil {
			return "the relay could not ask the server for its tool list: " + err.Error()
		}
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/list", "params": params})
		if err := r.forward(id, nil, line); err != nil {
			return "the relay could not ask the server for its tool list: " + err.Error()
		}
		t := time.NewTimer(listWait)
		select {
		case <-f.done:
			t.Stop()
		case <-t.C:
			r.flights.remove(string(id))
			return fmt.Sprintf("the server did not answer the relay's tools/list within %v, so the call's arguments cannot be checked against its tool's inputSchema", listWait)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err().Error()
		}
		if cursor = f.next; cursor == "" {
			break
		}
	}
	return ""
}

// toolsListed receipts a tool list by its hash h, the first time it is
// seen in the session and whenever it changes, so that a server that
// swaps its tool definitions mid-session is on the record.
func (r *relay) toolsListed(h string) {
	if r.tools.seen == nil {
		r.tools.seen = map[string]bool{}
	}
	if r.tools.seen[h] {
		return
	}
	if len(r.tools.seen) > 0 {
		r.log.Warn("mcp: the server's tool list changed", "tools_hash", h)
	}
	r.tools.seen[h] = true
	err := r.append(func() error {
		_, err := r.cfg.Gate.Record(context.Background(), gate.Event{Lifecycle: receipts.LifecycleToolsList, SessionID: r.cfg.SessionID,
			Agent: r.agent, ToolName: "mcp__" + r.cfg.Server, ToolOutputHash: h})
		return err
	})
	if err != nil {
		r.log.Error("mcp: recording the tool list failed", "err", err)
	}
}

// keep stores the input schemas of a page of tools; a first page
// replaces what was kept, a later one adds to it. Tools over the bounds
// are not kept.
func (t *tools) keep(list []any, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listed = true
	if first || t.schemas == nil {
		t.schemas, t.size = map[string]*toolSchema{}, 0
	}
	next := maps.Clone(t.schemas)
	size := t.size
	for _, e := range list {
		o, _ := e.(map[string]any)
		name, _ := o["name"].(string)
		in, _ := o["inputSchema"].(map[string]any)
		if name == "" || in == nil {
			continue
		}
		s, err := newToolSchema(in)
		if err != nil {
			continue
		}
		if old := next[name]; old != nil {
			size -= len(old.raw)
		}
		if len(next) >= maxSchemaTools || size+len(s.raw) > maxSchemaBytes {
			continue
		}
		next[name] = s
		size += len(s.raw)
	}
	t.schemas, t.size = next, size
}

// hideDenied returns a tools/list response (msg, parsed into v) without
// the tools the policy always denies (see Config.HideDenied), re-encoded;
// msg itself when it hides nothing.
func (r *relay) hideDenied(msg *serverLine, v map[string]any) *serverLine {
	if r.cfg.Gate.PolicyError(context.Background()) != nil {
		return msg // every call is denied anyway, with the reason
	}
	res, _ := v["result"].(map[string]any)
	list, _ := res["tools"].([]any)
	keep := make([]any, 0, len(list))
	for _, t := range list {
		if o, ok := t.(map[string]any); ok {
			if name, ok := o["name"].(string); ok && r.alwaysDenied(name) {
				continue
			}
		}
		keep = append(keep, t)
	}
	if len(keep) == len(list) {
		return msg
	}
	out := maps.Clone(v)
	res = maps.Clone(res)
	res["tools"] = keep
	out["result"] = res
	b, err := json.Marshal(out)
	if err != nil {
		return msg
	}
	return inMemory(append(b, '\n'))
}

// alwaysDenied reports whether the policy denies a call to tool with empty
// arguments and a verified proposal backed by trusted evidence.
func (r *relay) alwaysDenied(tool string) bool {
	mc := &policy.MCPContext{ServerCommand: r.cmd, ServerInfo: r.info(), HighImpact: r.high[tool] || r.high["*"],
		PIC: policy.PICContext{Present: true, Verified: true, Impact: "read", Trusted: []string{"evidence"}}}
	d := r.cfg.Gate.Preview(context.Background(), []policy.Call{{Agent: r.agent,
		ToolName: "mcp__" + r.cfg.Server + "__" + tool, ToolInput: []byte("{}"), Cwd: r.cfg.Gate.Store().Project(), MCP: mc}})
	return d.Decision != policy.Allow
}
