package hook

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/docketlog/docket/policy"
)

// call builds one policy call for a Claude Code tool with the given input.
func call(tool string, in map[string]any) policy.Call {
	b, err := json.Marshal(in)
	if err != nil {
		b = []byte("{}") // unreachable: in holds only strings and parsed JSON
	}
	return policy.Call{ToolName: tool, ToolInput: b}
}

// str returns the first of keys that is a non-empty string in m.
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// urlRE finds the URLs in a Gemini web_fetch prompt. Anything that looks
// like a URL is gated, whatever its scheme, so that the policy can refuse it.
// It is compiled on first use, off the start-up path of every hook.
var urlRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s<>"'` + "`" + `]+`)
})

// geminiCalls maps Gemini CLI's built-in tools to Claude Code's. Gemini
// names MCP tools mcp__<server>__<tool> like Claude Code; when the event's
// mcp_context names the server, that name is used. Unknown tools keep their
// name, which a policy must permit explicitly.
func geminiCalls(tool string, in map[string]any, event map[string]any) ([]policy.Call, error) {
	dir := str(in, "dir_path", "directory", "path")
	switch tool {
	case "run_shell_command":
		c := call("Bash", map[string]any{"command": str(in, "command"), "description": str(in, "description")})
		if d := str(in, "dir_path", "directory"); d != "" {
			c.Cwd = d // resolved against the event's cwd below
		}
		return []policy.Call{c}, nil
	case "read_file":
		return []policy.Call{call("Read", map[string]any{"file_path": str(in, "file_path", "absolute_path", "path")})}, nil
	case "write_file":
		return []policy.Call{call("Write", map[string]any{"file_path": str(in, "file_path", "absolute_path", "path"), "content": str(in, "content")})}, nil
	case "replace":
		return []policy.Call{call("Edit", map[string]any{"file_path": str(in, "file_path", "absolute_path", "path"),
			"old_string": str(in, "old_string"), "new_string": str(in, "new_string")})}, nil
	case "glob":
		return []policy.Call{call("Glob", map[string]any{"pattern": str(in, "pattern"), "path": dir})}, nil
	case "search_file_content", "grep_search", "grep":
		return []policy.Call{call("Grep", map[string]any{"pattern": str(in, "pattern"), "path": dir, "glob": str(in, "include")})}, nil
	case "list_directory", "ls":
		return []policy.Call{call("LS", map[string]any{"path": dir})}, nil
	case "read_many_files":
		var calls []policy.Call
		for _, key := range []string{"paths", "include"} {
			list, _ := in[key].([]any)
			for _, p := range list {
				if s, ok := p.(string); ok && s != "" {
					calls = append(calls, call("Glob", map[string]any{"pattern": s, "path": dir}))
				}
			}
		}
		if len(calls) == 0 {
			return nil, inputErrorf("read_many_files names no paths")
		}
		return calls, nil
	case "web_fetch":
		prompt := str(in, "prompt")
		urls := urlRE().FindAllString(prompt, -1)
		if u := str(in, "url"); u != "" {
			urls = append(urls, u)
		}
		if len(urls) == 0 {
			return nil, inputErrorf("web_fetch names no URL")
		}
		calls := make([]policy.Call, len(urls))
		for i, u := range urls {
			calls[i] = call("WebFetch", map[string]any{"url": strings.TrimRight(u, ".,;:)]}"), "prompt": prompt})
		}
		return calls, nil
	case "google_web_search":
		return []policy.Call{call("WebSearch", map[string]any{"query": str(in, "query")})}, nil
	case "write_todos":
		return []policy.Call{call("TodoWrite", in)}, nil
	}
	if ctx, ok := event["mcp_context"].(map[string]any); ok {
		if server, name := str(ctx, "server_name"), str(ctx, "tool_name"); server != "" && name != "" {
			tool = "mcp__" + server + "__" + name
		}
	}
	return []policy.Call{call(tool, in)}, nil
}

// codexCalls maps Codex's tools to Claude Code's. Codex reports its shell
// tool as Bash with tool_input.command (older builds: shell, exec_command,
// local_shell, sometimes with an argv array) and apply_patch with the patch
// text in tool_input.command; each file a patch adds, updates, deletes or
// moves to is gated as a Write or Edit.
func codexCalls(tool string, in map[string]any) ([]policy.Call, error) {
	switch tool {
	case "Bash", "shell", "exec_command", "local_shell", "container.exec":
		cmd := str(in, "command", "cmd")
		if argv, ok := in["command"].([]any); ok {
			cmd = shellJoin(argv)
		}
		cwd := str(in, "workdir", "cwd")
		if patch, ok := heredocPatch(cmd); ok {
			// A model without a native patch tool sends the patch through
			// the shell, and Codex applies it itself.
			calls := patchCalls(patch)
			if len(calls) == 0 {
				return nil, inputErrorf("apply_patch names no file")
			}
			for i := range calls {
				calls[i].Cwd = cwd
			}
			return calls, nil
		}
		c := call("Bash", map[string]any{"command": cmd, "description": str(in, "description")})
		c.Cwd = cwd
		return []policy.Call{c}, nil
	case "apply_patch", "ApplyPatch":
		patch := str(in, "command", "patch", "input")
		if argv, ok := in["command"].([]any); ok && len(argv) > 0 {
			patch, _ = argv[len(argv)-1].(string)
		}
		calls := patchCalls(patch)
		if len(calls) == 0 {
			return nil, inputErrorf("apply_patch names no file")
		}
		return calls, nil
	}
	return []policy.Call{call(tool, in)}, nil
}

// patchCalls returns one Write (added, deleted or moved-to file) or Edit
// (updated file) call per file named in a Codex apply_patch envelope.
func patchCalls(patch string) []policy.Call {
	var calls []policy.Call
	for line := range strings.Lines(patch) {
		line = strings.TrimRight(line, "\r\n")
		for prefix, tool := range map[string]string{
			"*** Add File: ": "Write", "*** Delete File: ": "Write",
			"*** Update File: ": "Edit", "*** Move to: ": "Write",
		} {
			if p, ok := strings.CutPrefix(line, prefix); ok {
				calls = append(calls, call(tool, map[string]any{"file_path": strings.TrimSpace(p)}))
			}
		}
	}
	return calls
}

// heredocPatch returns the patch of a shell command that is exactly
// `apply_patch <<'EOF'` (or applypatch, any delimiter, quoted or not)
// followed by the patch and the delimiter line, and nothing else; with an
// unquoted delimiter, the patch must hold nothing the shell expands. Any
// other command, even one that also applies a patch, is gated as a command.
func heredocPatch(cmd string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(cmd, " \t\n"), "apply_patch")
	if !ok {
		if rest, ok = strings.CutPrefix(strings.TrimLeft(cmd, " \t\n"), "applypatch"); !ok {
			return "", false
		}
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest, ok = strings.CutPrefix(rest, "<<"); !ok {
		return "", false
	}
	header, body, ok := strings.Cut(rest, "\n")
	if !ok {
		return "", false
	}
	delim := strings.TrimSpace(header)
	quoted := len(delim) >= 2 && (delim[0] == '\'' || delim[0] == '"') && delim[len(delim)-1] == delim[0]
	if quoted {
		delim = delim[1 : len(delim)-1]
	} else if strings.ContainsAny(body, "$`\\") {
		return "", false // the shell would expand the body: $(...) would run
	}
	if delim == "" || strings.ContainsAny(delim, " \t'\"$`\\;&|<>()") {
		return "", false
	}
	lines := strings.Split(strings.TrimRight(body, " \t\n"), "\n")
	if len(lines) == 0 || lines[len(lines)-1] != delim {
		return "", false
	}
	patch := lines[:len(lines)-1]
	for _, l := range patch {
		if l == delim {
			return "", false // a second command after the here-doc
		}
	}
	return strings.Join(patch, "\n") + "\n", true
}

// shellJoin quotes an argv array into one shell command line.
func shellJoin(argv []any) string {
	parts := make([]string, 0, len(argv))
	for _, a := range argv {
		s, _ := a.(string)
		parts = append(parts, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	// "bash -lc <script>" is what Codex runs; gate the script itself.
	if len(argv) == 3 {
		if sh, _ := argv[0].(string); (filepath.Base(sh) == "bash" || filepath.Base(sh) == "sh" || filepath.Base(sh) == "zsh") && (argv[1] == "-lc" || argv[1] == "-c") {
			s, _ := argv[2].(string)
			return s
		}
	}
	return strings.Join(parts, " ")
}
