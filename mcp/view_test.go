package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/docketlog/docket/receipts"
)

// The differential fuzz targets: whatever the relay forwards, a Go MCP
// server that decodes with encoding/json into the MCP Go SDK's types (as
// the SDK did before v1.3.1, GHSA-wvj2-96wp-fq3f, and mark3labs/mcp-go
// does) reads as the relay did; whatever server message it relays, a Go
// client reads as the relay receipted it.

// sdkWire is the SDK's wire form of a message (internal/jsonrpc2's
// wireCombined), decoded with encoding/json as before v1.3.1.
type sdkWire struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     string          `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// sdkResult is mcp.CallToolResult decoded as the SDK's UnmarshalJSON did
// before v1.3.1: its fields with encoding/json, content left raw.
type sdkResult struct {
	result
	Content []json.RawMessage `json:"content"`
}

type result mcp.CallToolResult

// fuzzIn is a tool's input as a Go tool handler decodes it (mcp.AddTool
// decodes the arguments into In); its inputSchema is the SDK's inference.
type fuzzIn struct {
	Path string   `json:"path"`
	Mode string   `json:"mode,omitempty"`
	N    int64    `json:"n,omitempty"`
	F    float64  `json:"f,omitempty"`
	Opts *fuzzOpt `json:"opts,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

type fuzzOpt struct {
	Kind string `json:"kind"`
	Deep []struct {
		Name string `json:"name"`
	} `json:"deep,omitempty"`
}

// fuzzTools holds the inputSchema of the tool "t" (fuzzIn), as a tools/list
// would give it.
func fuzzTools(tb testing.TB) *tools {
	s, err := jsonschema.For[fuzzIn](nil)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := json.Marshal(s)
	v, err := receipts.Parse(b)
	if err != nil {
		tb.Fatal(err)
	}
	t := &tools{}
	t.keep([]any{map[string]any{"name": "t", "inputSchema": v}}, true)
	return t
}

func FuzzClientView(f *testing.F) {
	tl := fuzzTools(f)
	f.Fuzz(func(t *testing.T, line []byte) { checkClientView(t, tl, line) })
}

// FuzzClientGen is FuzzClientView on messages generated from the input:
// objects of member names drawn from the protocol's and the tool's, with
// the folding tricks (case, ſ, K, ı, '_'), escapes, duplicates, numbers
// out of range, nesting and batches.
func FuzzClientGen(f *testing.F) {
	tl := fuzzTools(f)
	for _, s := range []string{"", "\x00\x01\x02", "\x05\x03\x07\x09\x11\x13", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, seed []byte) {
		checkClientView(t, tl, generate(seed))
	})
}

// checkClientView checks that what the relay forwards of line, Go reads as
// the relay does.
func checkClientView(t *testing.T, tl *tools, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	cm, ref := readClient(line, tl)
	if ref != nil {
		return // not forwarded
	}
	var w sdkWire
	if json.Unmarshal(cm.line, &w) != nil {
		return // Go reads nothing
	}
	if w.Method != cm.method {
		t.Fatalf("forwarded %s: Go reads method %q, the relay %q", cm.line, w.Method, cm.method)
	}
	gid, gerr := jsonrpc.MakeID(w.ID)
	var rv any
	if cm.id != nil {
		_ = json.Unmarshal(cm.id, &rv)
	}
	rid, _ := jsonrpc.MakeID(rv)
	if gerr == nil && gid.Raw() != rid.Raw() {
		t.Fatalf("forwarded %s: Go reads id %v, the relay %s", cm.line, gid.Raw(), cm.id)
	}
	var params map[string]any
	if cm.m != nil {
		params, _ = cm.m["params"].(map[string]any)
	}
	switch {
	case cm.call != nil:
		var p mcp.CallToolParamsRaw
		if json.Unmarshal(w.Params, &p) != nil {
			return
		}
		if p.Name != cm.call.name {
			t.Fatalf("forwarded %s: Go reads tool %q, the relay %q", cm.line, p.Name, cm.call.name)
		}
		if len(p.Arguments) == 0 {
			p.Arguments = json.RawMessage("{}")
		}
		var gm map[string]any
		if json.Unmarshal(p.Arguments, &gm) == nil {
			if c, err := receipts.Canonicalize(gm); err == nil && !bytes.Equal(c, cm.call.input) {
				t.Fatalf("forwarded %s: Go reads arguments %s, the relay %s", cm.line, c, cm.call.input)
			}
		}
		if cm.call.name == "t" {
			var gin, rin fuzzIn
			e1, e2 := json.Unmarshal(p.Arguments, &gin), json.Unmarshal(cm.call.input, &rin)
			if e1 == nil && e2 == nil && !reflect.DeepEqual(gin, rin) {
				t.Fatalf("forwarded %s: the tool handler reads %+v, the relay decided on %s (%+v)", cm.line, gin, cm.call.input, rin)
			}
		}
		if meta, ok := params["_meta"].(map[string]any); ok {
			g, _ := receipts.Canonicalize(map[string]any(p.Meta))
			r, _ := receipts.Canonicalize(meta)
			if !bytes.Equal(g, r) {
				t.Fatalf("forwarded %s: Go reads _meta %s, the relay %s", cm.line, g, r)
			}
		}
	case cm.method == "notifications/cancelled":
		var p mcp.CancelledParams
		if json.Unmarshal(w.Params, &p) != nil {
			return
		}
		g, _ := receipts.Canonicalize(p.RequestID)
		r, _ := receipts.Canonicalize(params["requestId"])
		if !bytes.Equal(g, r) {
			t.Fatalf("forwarded %s: Go cancels %s, the relay %s", cm.line, g, r)
		}
	}
}

// FuzzServerView checks that a server message the relay relays as a
// response reads, in Go, as the response to the same id, with the result
// or error the relay hashes and the same failure; and one it relays as a
// request or notification reads as one.
func FuzzServerView(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		msg := inMemory(append(bytes.TrimRight(line, "\n"), '\n'))
		sv := readServer(msg)
		if sv.drop != "" || sv.refused != "" {
			return // not relayed as is
		}
		var w sdkWire
		if json.Unmarshal(msg.data, &w) != nil {
			return
		}
		if !sv.response {
			if w.Method == "" {
				t.Fatalf("relayed %s as a request; Go reads a response", line)
			}
			return
		}
		if w.Method != "" {
			t.Fatalf("relayed %s as a response; Go reads a request", line)
		}
		gid, _ := jsonrpc.MakeID(w.ID)
		var rv any
		_ = json.Unmarshal(sv.id, &rv)
		if rid, _ := jsonrpc.MakeID(rv); gid.Raw() != rid.Raw() {
			t.Fatalf("relayed %s as the response to %s; Go reads %v", line, sv.id, gid.Raw())
		}
		failed := w.Error != nil
		if !failed {
			var r sdkResult
			if json.Unmarshal(w.Result, &r) != nil {
				return
			}
			failed = r.IsError
		}
		if failed != sv.failed {
			t.Fatalf("relayed %s: Go reads failed=%v, the relay %v", line, failed, sv.failed)
		}
		if sv.v != nil && !sv.rd.inexact && w.Error == nil {
			g, err := receipts.CanonicalizeJSON(w.Result)
			if err == nil && sha256Ref(g) != sv.outputHash(msg) {
				t.Fatalf("relayed %s: Go reads result %s, the relay hashed another", line, g)
			}
		}
	})
}

// generate builds a JSON-RPC message from seed (see FuzzClientGen).
func generate(seed []byte) []byte {
	g := &gen{seed: seed}
	var b strings.Builder
	if g.next()%8 == 0 {
		b.WriteString("[")
		g.object(&b, 0, genTop)
		b.WriteString("]")
	} else {
		g.object(&b, 0, genTop)
	}
	return []byte(b.String())
}

type gen struct {
	seed []byte
	i    int
}

func (g *gen) next() int {
	if g.i >= len(g.seed) {
		g.i++
		return g.i % 7
	}
	g.i++
	return int(g.seed[g.i-1])
}

func (g *gen) pick(list []string) string { return list[g.next()%len(list)] }

type genLevel int

const (
	genTop genLevel = iota
	genParams
	genArgs
	genMeta
)

var genNames = map[genLevel][]string{
	genTop:    {"jsonrpc", "id", "method", "params", "Method", "ID", "Params", "paramſ", "METHOD", "ıd", "jsonRPC", "result", "Id", "para_ms"},
	genParams: {"name", "arguments", "_meta", "Name", "Arguments", "NAME", "argumentſ", "meta", "requestId", "RequestId", "reason", "cursor", "nam\u212a"},
	genArgs:   {"path", "Path", "PATH", "pa_th", "mode", "Mode", "n", "N", "f", "opts", "Opts", "kind", "\u212aind", "deep", "name", "Name", "tags", "__proto__", "__pic", "x"},
	genMeta:   {"progressToken", "progressTo\u212aen", "ProgressToken", "progress_token", "io.modelcontextprotocol/protocolVersion"},
}

var genNumbers = []string{"1", "-1", "0", "2", "9007199254740991", "9007199254740993", "-9007199254740993", "0.1", "1e300",
	"-0", "1.0", "1e-400", "0.1000000000000000000001", "18446744073709551616", "1.5", "1E2"}

func (g *gen) object(b *strings.Builder, depth int, level genLevel) {
	b.WriteString("{")
	n := g.next() % 5
	if level == genTop {
		n += 2
	}
	for k := range n {
		if k > 0 {
			b.WriteString(",")
		}
		name := g.pick(genNames[level])
		g.name(b, name)
		b.WriteString(":")
		g.value(b, depth, level, name)
	}
	b.WriteString("}")
}

// name writes a member name, sometimes with a character escaped.
func (g *gen) name(b *strings.Builder, name string) {
	if r := g.next(); r%5 == 0 && name != "" {
		rs := []rune(name)
		i := r % len(rs)
		q1, _ := json.Marshal(string(rs[:i]))
		q2, _ := json.Marshal(string(rs[i+1:]))
		b.Write(q1[:len(q1)-1])
		fmt.Fprintf(b, `\u%04x`, rs[i])
		b.Write(q2[1:])
		return
	}
	q, _ := json.Marshal(name)
	b.Write(q)
}

func (g *gen) value(b *strings.Builder, depth int, level genLevel, name string) {
	switch {
	case level == genTop && foldEqual(name, "method"):
		q, _ := json.Marshal(g.pick([]string{"tools/call", "tools/call", "ping", "tools/list", "notifications/cancelled", ""}))
		b.Write(q)
	case level == genTop && foldEqual(name, "id"):
		b.WriteString(g.pick([]string{"1", `"a"`, "2", "9007199254740993", "1.5", "null", "{}", "-0", `"1"`}))
	case level == genTop && foldEqual(name, "params"):
		g.object(b, depth+1, genParams)
	case level == genParams && foldEqual(name, "name"):
		q, _ := json.Marshal(g.pick([]string{"t", "t", "write", "echo"}))
		b.Write(q)
	case level == genParams && (foldEqual(name, "arguments") || name == "argumentſ"):
		g.object(b, depth+1, genArgs)
	case level == genParams && foldEqual(name, "_meta"):
		g.object(b, depth+1, genMeta)
	case level == genArgs && depth < 4 && (foldEqual(name, "opts") || name == "deep" && g.next()%2 == 0):
		if name == "deep" {
			b.WriteString("[")
			g.object(b, depth+1, genArgs)
			b.WriteString("]")
		} else {
			g.object(b, depth+1, genArgs)
		}
	default:
		switch g.next() % 3 {
		case 0:
			b.WriteString(g.pick(genNumbers))
		case 1:
			q, _ := json.Marshal(g.pick([]string{"/tmp/x", "/etc/passwd", "a", ""}))
			b.Write(q)
		default:
			b.WriteString(g.pick([]string{"true", "null", "[]", "{}", `["a"]`}))
		}
	}
}

// BenchmarkReadClient measures the relay's reading of one tools/call (the
// scan for what parsers read differently and the strict parse): a
// micro-benchmark of that function alone.
func BenchmarkReadClient(b *testing.B) {
	tl := fuzzTools(b)
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"path":"/tmp/x","n":42,"opts":{"kind":"a"}}}}` + "\n")
	for b.Loop() {
		if _, ref := readClient(line, tl); ref != nil {
			b.Fatal(ref.why)
		}
	}
}

// BenchmarkReadServer measures the relay's reading of one tools/call
// response and its output hash: a micro-benchmark of those functions.
func BenchmarkReadServer(b *testing.B) {
	msg := inMemory([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"message\":\"hello\",\"n\":42}"}],"isError":false}}` + "\n"))
	for b.Loop() {
		sv := readServer(msg)
		if sv.refused != "" || sv.drop != "" || !strings.HasPrefix(sv.outputHash(msg), "sha256:") {
			b.Fatal(sv.refused, sv.drop)
		}
	}
}
