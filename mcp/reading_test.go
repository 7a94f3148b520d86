package mcp

import (
	"fmt"
	"strings"
	"testing"
)

// TestFoldKey checks the relay's fold (strictjson.FoldRune, and '_' and
// '-' dropped) on names the decoders take for one another, and on names
// they do not.
func TestFoldKey(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"params", "paramſ"}, {"name", "NAME"}, {"kind", "Kind"}, {"id", "ıd"}, {"id", "İd"},
		{"_meta", "meta"}, {"progressToken", "progress_token"}, {"isError", "is-error"},
	} {
		if !foldEqual(c.a, c.b) || foldKey(c.a) != foldKey(c.b) {
			t.Errorf("foldEqual(%q, %q) = false, want true", c.a, c.b)
		}
	}
	for _, c := range []struct{ a, b string }{{"id", "i"}, {"name", "names"}, {"a", "b"}, {"ſ", "ß"}} {
		if foldEqual(c.a, c.b) || foldKey(c.a) == foldKey(c.b) {
			t.Errorf("foldEqual(%q, %q) = true, want false", c.a, c.b)
		}
	}
}

func TestExactNumber(t *testing.T) {
	tests := []struct {
		lit  string
		want bool
	}{
		{"0", true}, {"-1", true}, {"123456789012345", true}, {"9007199254740991", true}, {"-9007199254740991", true},
		{"9007199254740992", false}, {"9007199254740993", false}, {"-9007199254740993", false},
		{"1152921504606847000", false}, {"1e300", false}, {"1e16", false}, {"1e15", true},
		{"0.1", true}, {"1.5", true}, {"1.0", true}, {"1E2", true}, {"1e-7", true}, {"5e-324", true},
		{"0.30000000000000004", true}, {"0.1000000000000000000001", false}, {"1e-400", false},
		{"-0", false}, {"-0.0", false}, {"0e10", true}, {"0.000", true}, {"1e400", false},
		{"123456789.123456789", false}, {"2.5e-5", true}, {"100e-2", true},
	}
	for _, tt := range tests {
		if got := exactNumber(tt.lit); got != tt.want {
			t.Errorf("exactNumber(%s) = %v, want %v", tt.lit, got, tt.want)
		}
	}
}

func TestDecodeName(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`name`, "name"}, {`na\u006de`, "name"}, {`\ud800`, "\uFFFD"}, {`\ud83d\ude00`, "😀"},
		{"a\xffb", "a\uFFFDb"}, {`\ud800\u0041`, "\uFFFDA"}, {`a\"b`, `a"b`},
	}
	for _, tt := range tests {
		if got := decodeName([]byte(tt.raw)); got != tt.want {
			t.Errorf("decodeName(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// TestInputSchema: the relay keeps each tool's inputSchema from the
// latest tools/list (a first page replaces, later pages add), strictly
// parsed and bounded.
func TestInputSchema(t *testing.T) {
	r := &relay{}
	schema := func(prop string) map[string]any {
		return map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{"type": "string"}}}
	}
	tool := func(name string, s map[string]any) any { return map[string]any{"name": name, "inputSchema": s} }
	r.tools.keep([]any{tool("a", schema("path")), tool("b", schema("url")), map[string]any{"name": "c"}}, true)
	if got := string(r.inputSchema("a")); got != `{"properties":{"path":{"type":"string"}},"type":"object"}` {
		t.Fatalf("inputSchema(a) = %s", got)
	}
	if r.inputSchema("c") != nil || r.inputSchema("x") != nil {
		t.Fatalf("inputSchema of a tool without one = %s, want nil", r.inputSchema("c"))
	}
	r.tools.keep([]any{tool("d", schema("q"))}, false) // a later page
	if r.inputSchema("a") == nil || r.inputSchema("d") == nil {
		t.Fatal("a later page replaced the first")
	}
	r.tools.keep([]any{tool("a", schema("file"))}, true) // a new list
	if got := string(r.inputSchema("a")); got != `{"properties":{"file":{"type":"string"}},"type":"object"}` || r.inputSchema("b") != nil {
		t.Fatalf("after a new list: inputSchema(a) = %s, inputSchema(b) = %s; want the latest, and b gone", got, r.inputSchema("b"))
	}
	big := map[string]any{"description": strings.Repeat("x", maxSchemaBytes)}
	r.tools.keep([]any{tool("big", big), tool("small", schema("s"))}, true)
	if r.inputSchema("big") != nil || r.inputSchema("small") == nil {
		t.Fatal("a schema over the bound was kept, or the next one dropped")
	}
	if why := r.tools.checkArguments("small", map[string]any{"S": 1}); why == "" {
		t.Fatal(`checkArguments(small, {"S":1}) = "", want a refusal (the schema names s)`)
	}
	if why := r.tools.checkArguments("small", map[string]any{"s": 1, "T": 2}); why != "" {
		t.Fatalf(`checkArguments(small, {"s":1,"T":2}) = %q, want ""`, why)
	}
}

// TestReadingWideObject: an object with many members is checked with a
// set of fold keys (pairwise, 50,000 members would take minutes), and a
// fold collision after the first members is still found.
func TestReadingWideObject(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":{`)
	for i := range 50_000 {
		fmt.Fprintf(&b, `"k%d":%d,`, i, i)
	}
	clean := b.String() + `"last":0}}}`
	if rd := readBytes([]byte(clean)); rd.err != nil || rd.ambiguous != "" {
		t.Fatalf("read(wide object) = %v, %q; want no ambiguity", rd.err, rd.ambiguous)
	}
	folded := b.String() + `"K49999":0}}}`
	if rd := readBytes([]byte(folded)); !strings.Contains(rd.ambiguous, `"k49999" and "K49999"`) {
		t.Fatalf("read(wide object with k49999 and K49999).ambiguous = %q", rd.ambiguous)
	}
}
