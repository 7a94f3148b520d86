package policy

import (
	"encoding/json"
	"os"
	"testing"
)

func benchDecide(b *testing.B, tool, input string) {
	f := newFixture(b)
	e := defaultEngine(b)
	c := f.call(tool, input)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if d := e.Decide(b.Context(), c); d.Decision == "" {
			b.Fatal("no decision")
		}
	}
}

// BenchmarkDecideBash decides a typical Bash call (3 simple commands, one
// redirection) against the default policy (23 policies).
func BenchmarkDecideBash(b *testing.B) {
	benchDecide(b, "Bash", bashInput("git status && go test ./... 2>&1 | tail -20 > test.log"))
}

// BenchmarkDecideBashSimple decides `ls -la`.
func BenchmarkDecideBashSimple(b *testing.B) {
	benchDecide(b, "Bash", bashInput("ls -la"))
}

// BenchmarkDecideBashBypass decides a denied wrapper chain.
func BenchmarkDecideBashBypass(b *testing.B) {
	benchDecide(b, "Bash", bashInput(`sudo env X=1 bash -c "ls | xargs rm -rf /"`))
}

func BenchmarkDecideRead(b *testing.B) {
	benchDecide(b, "Read", `{"file_path":"src/main.go"}`)
}

func BenchmarkDecideWebFetch(b *testing.B) {
	benchDecide(b, "WebFetch", `{"url":"https://api.github.com/repos/x/y","prompt":"p"}`)
}

// BenchmarkLoadDefault loads and validates the default policy file, as
// every `docket hook pre` process does.
func BenchmarkLoadDefault(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadDefault(); err != nil {
			b.Fatal(err)
		}
	}
}

var _ = json.Marshal

// BenchmarkLoadDefaultValidated loads the default policy whose digest was
// validated before, as the hook does.
func BenchmarkLoadDefaultValidated(b *testing.B) {
	e := defaultEngine(b)
	opts := Options{ValidatedDigest: e.Digest()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opts.Load(File{Name: DefaultName, Data: Default}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideBash20 decides the BenchmarkDecideBash call against a
// file of exactly 20 policies.
func BenchmarkDecideBash20(b *testing.B) {
	f := newFixture(b)
	e, err := LoadFiles("../testdata/policy/bench/twenty.cedar")
	if err != nil {
		b.Fatal(err)
	}
	if n := len(e.Check().Policies); n != 20 {
		b.Fatalf("twenty.cedar has %d policies", n)
	}
	c := f.call("Bash", bashInput("git status && go test ./... 2>&1 | tail -20 > test.log"))
	b.ReportAllocs()
	for b.Loop() {
		if d := e.Decide(b.Context(), c); d.Decision != Allow {
			b.Fatalf("Decide() = %+v", d)
		}
	}
}

// BenchmarkLoad20 loads and validates the 20-policy file.
func BenchmarkLoad20(b *testing.B) {
	data, err := os.ReadFile("../testdata/policy/bench/twenty.cedar")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(File{Name: "twenty.cedar", Data: data}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMCP(b *testing.B, tool, input, schema string) {
	f := newFixture(b)
	e := trustedEngine(b)
	c := f.call(tool, input)
	c.MCP = &MCPContext{ServerCommand: "node server-filesystem " + f.proj, ServerInfo: "secure-filesystem-server 0.2.0",
		InputSchema: json.RawMessage(schema)}
	b.ReportAllocs()
	for b.Loop() {
		if d := e.Decide(b.Context(), c); d.Decision != Allow {
			b.Fatalf("Decide() = %+v", d)
		}
	}
}

// BenchmarkDecideMCP decides an MCP read_text_file call of a project file,
// as docket mcp does for a trusted server.
func BenchmarkDecideMCP(b *testing.B) {
	benchMCP(b, "mcp__fs__read_text_file", `{"path":"src/main.go"}`, "")
}

const benchEditInput = `{"path":"main.go","edits":[{"oldText":"package main","newText":"package x"},{"oldText":"a","newText":"b"}],"dryRun":false}`

// BenchmarkDecideMCPEdit decides an MCP edit_file call with two edits.
func BenchmarkDecideMCPEdit(b *testing.B) {
	benchMCP(b, "mcp__fs__edit_file", benchEditInput, "")
}

// BenchmarkDecideMCPEditSchema is BenchmarkDecideMCPEdit with the tool's
// inputSchema as @modelcontextprotocol/server-filesystem lists it.
func BenchmarkDecideMCPEditSchema(b *testing.B) {
	benchMCP(b, "mcp__fs__edit_file", benchEditInput, fsEditSchema)
}
