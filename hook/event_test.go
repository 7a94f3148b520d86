package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/policy"
)

// TestParseEventMapping checks how each agent's tool calls are mapped to the
// Claude Code calls the policy decides.
func TestParseEventMapping(t *testing.T) {
	type call struct {
		Tool  string
		Input map[string]any
		Cwd   string
	}
	tests := []struct {
		name  string
		agent Agent
		event string
		want  []call
	}{
		{"claude Bash", Claude, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"ls"}}`,
			[]call{{"Bash", map[string]any{"command": "ls"}, "/p"}}},
		{"claude MCP", Claude, `{"session_id":"s","cwd":"/p","tool_name":"mcp__github__create_issue","tool_input":{"title":"x"}}`,
			[]call{{"mcp__github__create_issue", map[string]any{"title": "x"}, "/p"}}},
		{"gemini shell in a subdirectory", Gemini, `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"go vet","dir_path":"sub"}}`,
			[]call{{"Bash", map[string]any{"command": "go vet", "description": ""}, "/p/sub"}}},
		{"gemini read_file", Gemini, `{"session_id":"s","cwd":"/p","tool_name":"read_file","tool_input":{"absolute_path":"/p/a.go"}}`,
			[]call{{"Read", map[string]any{"file_path": "/p/a.go"}, "/p"}}},
		{"gemini replace", Gemini, `{"session_id":"s","cwd":"/p","tool_name":"replace","tool_input":{"file_path":"/p/a.go","old_string":"a","new_string":"b"}}`,
			[]call{{"Edit", map[string]any{"file_path": "/p/a.go", "old_string": "a", "new_string": "b"}, "/p"}}},
		{"gemini web_fetch with two URLs", Gemini, `{"session_id":"s","cwd":"/p","tool_name":"web_fetch","tool_input":{"prompt":"compare https://go.dev/a and https://evil.example/b."}}`,
			[]call{
				{"WebFetch", map[string]any{"url": "https://go.dev/a", "prompt": "compare https://go.dev/a and https://evil.example/b."}, "/p"},
				{"WebFetch", map[string]any{"url": "https://evil.example/b", "prompt": "compare https://go.dev/a and https://evil.example/b."}, "/p"},
			}},
		{"gemini MCP from mcp_context", Gemini, `{"session_id":"s","cwd":"/p","tool_name":"create_issue","tool_input":{},"mcp_context":{"server_name":"github","tool_name":"create_issue"}}`,
			[]call{{"mcp__github__create_issue", map[string]any{}, "/p"}}},
		{"codex argv shell", Codex, `{"session_id":"s","cwd":"/p","tool_name":"shell","tool_input":{"command":["bash","-lc","rm -rf /"],"workdir":"/w"}}`,
			[]call{{"Bash", map[string]any{"command": "rm -rf /", "description": ""}, "/w"}}},
		{"codex apply_patch", Codex, `{"session_id":"s","cwd":"/p","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: a.go\n*** Move to: /etc/b.go\n*** Add File: c.go\n*** End Patch"}}`,
			[]call{
				{"Edit", map[string]any{"file_path": "a.go"}, "/p"},
				{"Write", map[string]any{"file_path": "/etc/b.go"}, "/p"},
				{"Write", map[string]any{"file_path": "c.go"}, "/p"},
			}},
		{"codex apply_patch here-doc through the shell", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.go\n+package a\n*** Delete File: /etc/passwd\n*** End Patch\nEOF\n"}}`,
			[]call{
				{"Write", map[string]any{"file_path": "a.go"}, "/p"},
				{"Write", map[string]any{"file_path": "/etc/passwd"}, "/p"},
			}},
		{"codex applypatch unquoted here-doc in a workdir", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"applypatch <<PATCH\n*** Begin Patch\n*** Update File: b.go\n*** End Patch\nPATCH","workdir":"/w"}}`,
			[]call{{"Edit", map[string]any{"file_path": "b.go"}, "/w"}}},
		{"codex here-doc followed by a command", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.go\n*** End Patch\nEOF\nrm -rf /"}}`,
			[]call{{"Bash", map[string]any{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.go\n*** End Patch\nEOF\nrm -rf /", "description": ""}, "/p"}}},
		{"codex here-doc then a second one", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"apply_patch <<EOF\n*** Add File: a.go\nEOF\nrm -rf / <<EOF\nEOF"}}`,
			[]call{{"Bash", map[string]any{"command": "apply_patch <<EOF\n*** Add File: a.go\nEOF\nrm -rf / <<EOF\nEOF", "description": ""}, "/p"}}},
		{"codex unquoted here-doc the shell expands", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"apply_patch <<EOF\n*** Add File: a.go\n+$(rm -rf /)\nEOF"}}`,
			[]call{{"Bash", map[string]any{"command": "apply_patch <<EOF\n*** Add File: a.go\n+$(rm -rf /)\nEOF", "description": ""}, "/p"}}},
		{"codex apply_patch piped", Codex, `{"session_id":"s","cwd":"/p","tool_name":"Bash","tool_input":{"command":"apply_patch <<EOF | sh\n*** Add File: a.go\nEOF"}}`,
			[]call{{"Bash", map[string]any{"command": "apply_patch <<EOF | sh\n*** Add File: a.go\nEOF", "description": ""}, "/p"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseEvent(tt.agent, Pre, []byte(tt.event), "/p")
			if err != nil {
				t.Fatalf("ParseEvent(%s) = %v", tt.name, err)
			}
			var got []call
			for _, c := range ev.Calls {
				var in map[string]any
				if err := json.Unmarshal(c.ToolInput, &in); err != nil {
					t.Fatal(err)
				}
				if c.Agent != string(tt.agent) {
					t.Fatalf("ParseEvent(%s) call agent = %q, want %q", tt.name, c.Agent, tt.agent)
				}
				got = append(got, call{c.ToolName, in, c.Cwd})
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Fatalf("ParseEvent(%s) calls = %s, want %s", tt.name, gj, wj)
			}
		})
	}
}

// TestCallKey checks that a decision and its execution agree on the key
// that links them, with and without a tool_use_id.
func TestCallKey(t *testing.T) {
	for _, id := range []string{`"tool_use_id":"toolu_1",`, ""} {
		pre, err := ParseEvent(Claude, Pre, []byte(`{`+id+`"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls", "timeout": 1}}`), "/p")
		if err != nil {
			t.Fatal(err)
		}
		post, err := ParseEvent(Claude, Post, []byte(`{`+id+`"session_id":"s","tool_name":"Bash","tool_input":{"timeout":1,"command":"ls"},"tool_response":{"stdout":""}}`), "/p")
		if err != nil {
			t.Fatal(err)
		}
		if pre.CallKey() != post.CallKey() || pre.ToolInputHash != post.ToolInputHash || post.ToolOutputHash == "" {
			t.Fatalf("CallKey() = %q and %q (input hashes %s, %s), want equal keys for one call", pre.CallKey(), post.CallKey(), pre.ToolInputHash, post.ToolInputHash)
		}
	}
}

// FuzzParseEvent checks that no hook input crashes the parser and that
// whatever it accepts for pre has a session, a tool and calls to decide.
func FuzzParseEvent(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "testdata", "hook", "*", "*.json"))
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
		f.Add(data, uint8(1))
		f.Add(data, uint8(2))
	}
	f.Add([]byte(`{"session_id":"s","tool_name":"web_fetch","tool_input":{"prompt":"x://"}}`), uint8(1))
	agents := []Agent{Claude, Gemini, Codex}
	f.Fuzz(func(t *testing.T, data []byte, a uint8) {
		agent := agents[int(a)%len(agents)]
		ev, err := ParseEvent(agent, Pre, data, "/p")
		if err != nil {
			return
		}
		if ev.SessionID == "" || ev.ToolName == "" || len(ev.Calls) == 0 || ev.ToolInputHash == "" {
			t.Fatalf("ParseEvent(%q) = %+v, want a session, a tool and calls", data, ev)
		}
		if slices.ContainsFunc(ev.Calls, func(c policy.Call) bool { return !filepath.IsAbs(c.Cwd) }) {
			t.Fatalf("ParseEvent(%q) gave a call with a relative cwd", data)
		}
	})
}

// TestParseEventFailed checks that the post events of agents without a
// failure event, captured from Gemini CLI 0.61 and Codex 0.169, are
// receipted as failures when the response shows one.
func TestParseEventFailed(t *testing.T) {
	for _, tt := range []struct {
		agent   Agent
		fixture string
		event   string // instead of fixture
		want    bool
	}{
		{agent: Gemini, fixture: "gemini/after-tool-failed.json", want: true},
		{agent: Gemini, fixture: "gemini/after-tool-shell.json"},
		{agent: Gemini, event: `{"session_id":"s","tool_name":"read_file","tool_input":{},"tool_response":{"llmContent":"","error":{"message":"File not found","type":"file_not_found"}}}`, want: true},
		{agent: Codex, fixture: "codex/post-bash.json"},
		// Codex 0.169 sends no exit code: this failure cannot be seen.
		{agent: Codex, fixture: "codex/post-bash-failed.json"},
		{agent: Codex, event: `{"session_id":"s","tool_name":"Bash","tool_input":{},"tool_response":"Exit code: 2\nWall time: 0.1 seconds\nOutput:\nno such file"}`, want: true},
		{agent: Codex, event: `{"session_id":"s","tool_name":"Bash","tool_input":{},"tool_response":{"output":"x","exit_code":1}}`, want: true},
		// Claude Code has PostToolUseFailure: its PostToolUse is a success.
		{agent: Claude, event: `{"session_id":"s","tool_name":"Bash","tool_input":{},"tool_response":"Exit code: 2"}`},
	} {
		data := []byte(tt.event)
		if tt.fixture != "" {
			var err error
			if data, err = os.ReadFile(filepath.Join("..", "testdata", "hook", tt.fixture)); err != nil {
				t.Fatal(err)
			}
		}
		ev, err := ParseEvent(tt.agent, Post, data, "/p")
		if err != nil {
			t.Fatalf("ParseEvent(%s%s) = %v", tt.fixture, tt.event, err)
		}
		if ev.Failed != tt.want {
			t.Errorf("ParseEvent(%s%s).Failed = %v, want %v", tt.fixture, tt.event, ev.Failed, tt.want)
		}
	}
}

// FuzzHeredocPatch checks that a command is taken for a patch only when it
// is one apply_patch here-doc, so that nothing else runs ungated.
func FuzzHeredocPatch(f *testing.F) {
	f.Add("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n*** End Patch\nEOF\n")
	f.Add("apply_patch <<EOF\nx\nEOF\nrm -rf /")
	f.Add("applypatch <<\"P\"\nP")
	f.Add("apply_patch <<EOF\n*** Add File: a\n+$(rm -rf /)\nEOF")
	f.Fuzz(func(t *testing.T, cmd string) {
		patch, ok := heredocPatch(cmd)
		if !ok {
			return
		}
		head := strings.TrimLeft(cmd, " \t\n")
		if !strings.HasPrefix(head, "apply_patch") && !strings.HasPrefix(head, "applypatch") {
			t.Fatalf("heredocPatch(%q) = ok for a command that is not apply_patch", cmd)
		}
		if strings.ContainsAny(strings.SplitN(head, "\n", 2)[0], ";&|`$()") {
			t.Fatalf("heredocPatch(%q) = ok with more than a here-doc on its first line", cmd)
		}
		if !strings.Contains(strings.SplitN(head, "\n", 2)[0], "'") && !strings.Contains(strings.SplitN(head, "\n", 2)[0], `"`) && strings.ContainsAny(patch, "$`") {
			t.Fatalf("heredocPatch(%q) = ok for an unquoted here-doc the shell expands", cmd)
		}
		if !strings.HasSuffix(patch, "\n") {
			t.Fatalf("heredocPatch(%q) = %q, want a patch ending in a newline", cmd, patch)
		}
	})
}
