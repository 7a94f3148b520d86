package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/policy/internal/shell"
)

// Fuzz targets: seeds live in testdata/fuzz and run in plain `go test`.

const (
	fuzzHome = "/nonexistent-docket-fuzz/home"
	fuzzProj = "/nonexistent-docket-fuzz/home/proj"
)

func FuzzDecideBash(f *testing.F) {
	for _, s := range []string{
		"ls -la", "ls; rm -rf /", "echo $(rm -rf /)", "r''m -rf /", "bash -c 'rm -rf /'",
		"ls | xargs rm -rf /", "git status > ~/.bashrc", "curl x | sh", "$X -rf /",
		"find / -exec rm {} ;", "env -S 'a b'", "f() { g; }; f", "cat <<EOF\n$(x)\nEOF",
		"a=1 b=$(c) d", "echo {a,b}", "x >& y", "coproc sleep 1", "[[ $(a) ]]", "let x=$(b)",
	} {
		f.Add(s)
	}
	e, err := LoadDefault()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		c := Call{ToolName: "Bash", Cwd: fuzzProj, Home: fuzzHome}
		c.ToolInput, _ = json.Marshal(map[string]string{"command": cmd})
		// JSON replaces invalid UTF-8: analyze what Decide will see.
		var in struct{ Command string }
		if err := json.Unmarshal(c.ToolInput, &in); err != nil {
			t.Fatal(err)
		}
		cmd = in.Command
		// The analysis must not panic (Decide would hide it behind recover).
		sh, shErr := shell.Analyze(cmd, fuzzHome, fuzzProj, fuzzProj)
		x, err := newCallEnv(e, c)
		if err != nil {
			t.Fatal(err)
		}
		_, buildErr := x.build(c)

		d := e.Decide(context.Background(), c)
		switch d.Decision {
		case Allow, Deny, RequireApproval:
		default:
			t.Fatalf("Decide(%q) = %q, not a decision", cmd, d.Decision)
		}
		if strings.HasPrefix(d.Message, "internal error") {
			t.Fatalf("Decide(%q) panicked: %s", cmd, d.Message)
		}
		if (shErr != nil || buildErr != nil) && d.Decision != Deny {
			t.Fatalf("Decide(%q) = %s, want deny after error %v %v", cmd, d.Decision, shErr, buildErr)
		}
		if d.Decision == Allow {
			if shErr != nil || len(d.Requests) < 1+len(sh.Commands) {
				t.Fatalf("Decide(%q) = allow with %d requests for %d commands", cmd, len(d.Requests), len(sh.Commands))
			}
			for _, r := range d.Requests {
				if r.Decision != Allow || len(r.Errors) > 0 {
					t.Fatalf("Decide(%q) = allow but request %s on %s = %s %v", cmd, r.Action, r.Resource, r.Decision, r.Errors)
				}
			}
		}
	})
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"https://go.dev/doc", "https://github.com@evil.example", "http://[::1]:80/", "https://a.b.c./x?y#z",
		"file:///etc/passwd", `https://a\@b`, "https://%65vil.example/", "HTTPS://GITHUB.COM", "http://0x7f.1/",
		"https://exa_mple.com:443", "//github.com/x",
	} {
		f.Add(s)
	}
	e, err := LoadDefault()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parseURL(raw)
		c := Call{ToolName: "WebFetch", Cwd: fuzzProj, Home: fuzzHome}
		c.ToolInput, _ = json.Marshal(map[string]string{"url": raw, "prompt": "p"})
		d := e.Decide(context.Background(), c)
		if err != nil {
			if d.Decision != Deny {
				t.Fatalf("Decide(WebFetch %q) = %s, want deny after %v", raw, d.Decision, err)
			}
			return
		}
		if p.Host == "" || strings.ContainsAny(p.Host, "@/\\ ") || (p.Scheme != "http" && p.Scheme != "https") {
			t.Fatalf("parseURL(%q) = %+v, bad host or scheme", raw, p)
		}
		if len(p.Chain) == 0 || p.Chain[0] != p.Host {
			t.Fatalf("parseURL(%q) chain %v does not start with host %q", raw, p.Chain, p.Host)
		}
		// The normalized URL parses to the same host: what the gate checked
		// is what a client would connect to.
		q, err := parseURL(p.URL)
		if err != nil || q.Host != p.Host || q.URL != p.URL {
			t.Fatalf("parseURL(%q) = %q, reparsed %+v, %v", raw, p.URL, q, err)
		}
		if d.Decision == Allow && p.Scheme != "https" {
			t.Fatalf("Decide(WebFetch %q) = allow over %s", raw, p.Scheme)
		}
	})
}

// FuzzDecideTool feeds arbitrary tool names and tool_input bytes.
func FuzzDecideTool(f *testing.F) {
	for _, s := range [][2]string{
		{"Read", `{"file_path":"../../etc/passwd"}`}, {"Glob", `{"pattern":"../**","path":"~"}`},
		{"Grep", `{"pattern":"x","glob":"*.{a,{b,c}}"}`}, {"WebFetch", `{"url":"https://x@y"}`},
		{"mcp__a__b", `{"k":[1,2]}`}, {"mcp__", `{}`}, {"Write", `{"file_path":"~root/x"}`}, {"Bash", `null`},
		{"NotebookEdit", `{"notebook_path":"\u0000"}`}, {"Edit", `{"file_path":{}}`},
		{"Write", `{"file_path":"Makefile","content":"a:\n\t$(shell x)\n"}`},
		{"Edit", `{"file_path":"package.json","new_string":"\"t\": \"rm -rf ~\""}`},
		{"MultiEdit", `{"file_path":".husky/pre-commit","edits":[{"new_string":"$(("}]}`},
		{"Write", `{"file_path":"x.go","content":"//go:generate a 'b"}`},
	} {
		f.Add(s[0], s[1])
	}
	e, err := LoadDefault()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tool, input string) {
		c := Call{ToolName: tool, ToolInput: json.RawMessage(input), Cwd: fuzzProj, Home: fuzzHome}
		x, err := newCallEnv(e, c)
		if err != nil {
			t.Fatal(err)
		}
		_, buildErr := x.build(c) // must not panic
		d := e.Decide(context.Background(), c)
		if strings.HasPrefix(d.Message, "internal error") {
			t.Fatalf("Decide(%q, %q) panicked: %s", tool, input, d.Message)
		}
		if buildErr != nil && d.Decision != Deny {
			t.Fatalf("Decide(%q, %q) = %s after %v", tool, input, d.Decision, buildErr)
		}
		if !json.Valid([]byte(input)) && len(strings.TrimSpace(input)) > 0 && d.Decision != Deny {
			t.Fatalf("Decide(%q, invalid JSON %q) = %s", tool, input, d.Decision)
		}
	})
}

// FuzzDecideMCP feeds MCP tool names, arguments and input schemas: the
// argument walk never panics, an error denies, and an allowed call has a
// File request for its "path" argument when that is a clean absolute path.
func FuzzDecideMCP(f *testing.F) {
	for _, s := range [][3]string{
		{"read_text_file", `{"path":".env"}`, ""},
		{"read_multiple_files", `{"paths":["a","/x/../.ssh/id_rsa"]}`, `{"properties":{"paths":{"type":"array","items":{"type":"string"}}}}`},
		{"move_file", `{"source":"a","destination":"~/.bashrc"}`, ""},
		{"fetch", `{"url":"https://x@y/"}`, `{"properties":{"url":{"format":"uri"}}}`},
		{"edit_file", `{"path":"main.go","edits":[{"oldText":"/etc","newText":".env"}]}`, ""},
		{"frob", `{"a":{"b":[{"cwd":"/tmp","file":"x"}]}}`, `{"properties":{"a":{"$ref":"#"}}}`},
		{"get", `{"uri":"file://localhost/%2e%2e/etc/shadow"}`, `[`},
		{"git_add", `{"repo_path":".","files":["."]}`, ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	e, err := LoadDefault()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, input, schema string) {
		c := Call{ToolName: "mcp__fs__" + method, ToolInput: json.RawMessage(input), Cwd: fuzzProj, Home: fuzzHome,
			MCP: &MCPContext{InputSchema: json.RawMessage(schema)}}
		x, err := newCallEnv(e, c)
		if err != nil {
			t.Fatal(err)
		}
		_, buildErr := x.build(c) // must not panic
		d := e.Decide(context.Background(), c)
		switch {
		case strings.HasPrefix(d.Message, "internal error"):
			t.Fatalf("Decide(%q, %q) panicked: %s", method, input, d.Message)
		case buildErr != nil && d.Decision != Deny:
			t.Fatalf("Decide(%q, %q) = %s after %v", method, input, d.Decision, buildErr)
		case d.Decision != Allow:
			return
		}
		var args struct{ Path any }
		if json.Unmarshal([]byte(input), &args) != nil {
			return
		}
		p, ok := args.Path.(string)
		if !ok || !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
			return
		}
		for _, r := range d.Requests {
			if r.Resource == fmt.Sprintf("File::%q", p) || r.Resource == fmt.Sprintf("File::%q", filepath.Join(p, "*")) {
				return
			}
		}
		t.Fatalf("Decide(%q, %q) = allow without a File request for path %q: %v", method, input, p, d.Requests)
	})
}
