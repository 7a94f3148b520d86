package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/docketlog/docket/policy/internal/shell"
)

// Call is one agent tool call, normalized by the hook layer: ToolName is a
// Claude Code tool name (Bash, Read, Write, Edit, MultiEdit, NotebookEdit,
// Glob, Grep, LS, WebFetch, WebSearch, Task, TodoWrite, mcp__<server>__<tool>)
// or any other name, which still becomes Action::"<name>".
type Call struct {
	Agent      string          // client name: "claude", "gemini", "codex"; "" means "claude"
	ToolName   string          // Claude Code tool name
	ToolInput  json.RawMessage // the tool_input object as sent by the agent
	Cwd        string          // absolute working directory of the agent
	ProjectDir string          // absolute project root; "" means Cwd
	Home       string          // absolute home directory, for "~"
	// MCP is what the MCP gate (docket mcp) knows of an MCP tool call;
	// nil for calls reported by hooks.
	MCP *MCPContext
}

// MCPContext is the MCP gate's context for an MCP tool call: the server's
// identity, whether the tool is high impact, and the result of verifying
// the call's PIC action proposal. It becomes McpCtx attributes.
//
// The arguments of every MCP tool call (with or without an MCPContext) that
// name files or URLs also become Read, Write and WebFetch requests, so the
// file and network rules hold for MCP tools as for the agents' own; the
// schema, when known, adds the arguments whose format says they are URLs
// or paths (see docs/mcp.md).
type MCPContext struct {
	ServerCommand string // the server's command line as run
	ServerInfo    string // "name version" from the server's serverInfo, "" until known
	HighImpact    bool   // the configuration names the tool as high impact
	PIC           PICContext
	// InputSchema is the tool's inputSchema from the server's latest
	// tools/list; empty when unknown.
	InputSchema json.RawMessage
}

// PICContext is the outcome of verifying a PIC proposal (package pic).
type PICContext struct {
	Present  bool     // the call carried a proposal under __pic
	Verified bool     // it verified (a proposal that fails verification never reaches the policy)
	Impact   string   // its impact class
	Trusted  []string // ids of evidence that verified and made provenance trusted
}

// Resource types and well-known tools.
const (
	toolType    = types.EntityType("Tool")
	programType = types.EntityType("Program")
	agentType   = types.EntityType("Agent")
)

// maxRequests bounds the Cedar requests built for one call.
const maxRequests = 1024

// reservedActions are schema action names that are not tools.
var reservedActions = map[string]bool{
	"FileRead": true, "FileWrite": true, "Exec": true, "Network": true, "Mcp": true, "ExecCommand": true,
	ActionWriteBuildFile: true, ActionWriteAutorunFile: true,
}

// callEnv is the per-call state: paths, and the entities built for the
// call's requests. It is the EntityGetter for evaluation.
type callEnv struct {
	e                     *Engine
	resolved              bool     // realHome and realProject are set
	links                 resolver // symlinks resolved for this call
	cwd, home, project    string
	realHome, realProject string
	ents                  types.EntityMap
	dyn                   map[types.EntityUID]types.Entity // undeclared tool actions
	hooks                 *[]string                        // the project's core.hooksPath, once read
}

func (x *callEnv) Get(uid types.EntityUID) (types.Entity, bool) {
	if ent, ok := x.ents[uid]; ok {
		return ent, true
	}
	if ent, ok := x.e.actions[uid]; ok {
		return ent, true
	}
	ent, ok := x.dyn[uid]
	return ent, ok
}

// built is one request before evaluation.
type built struct {
	req      cedar.Request
	declared bool // the action is in the schema, so the request is validated
	// planted is the file a command was planted in (a Makefile recipe
	// written by the call): only a forbid of such a request counts.
	planted string
}

type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, a ...any) error {
	return &inputError{fmt.Sprintf(format, a...)}
}

func newCallEnv(e *Engine, c Call) (*callEnv, error) {
	x := &callEnv{e: e, ents: make(types.EntityMap)}
	clean := func(what, p string) (string, error) {
		if p == "" {
			return "", nil
		}
		if !filepath.IsAbs(p) {
			return "", badInput("%s %q is not absolute", what, p)
		}
		return filepath.Clean(p), nil
	}
	var err error
	if x.cwd, err = clean("cwd", c.Cwd); err != nil {
		return nil, err
	}
	if x.home, err = clean("home", c.Home); err != nil {
		return nil, err
	}
	if x.project, err = clean("project dir", c.ProjectDir); err != nil {
		return nil, err
	}
	if x.project == "" {
		x.project = x.cwd
	}
	return x, nil
}

// toolInput holds the tool_input fields the gate looks at.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	Glob         string `json:"glob"`
	Command      string `json:"command"`
	Description  string `json:"description"`
	URL          string `json:"url"`
	Prompt       string `json:"prompt"`
	Content      string `json:"content"`
	NewString    string `json:"new_string"`
	NewSource    string `json:"new_source"`
	Edits        []struct {
		NewString string `json:"new_string"`
	} `json:"edits"`
}

// written returns the text a write or edit puts into the file.
func (in toolInput) written() string {
	parts := []string{in.Content, in.NewString, in.NewSource}
	for _, e := range in.Edits {
		parts = append(parts, e.NewString)
	}
	return strings.Join(parts, "\n")
}

func str(s string) types.String { return types.String(s) }

// build turns a call into its Cedar requests.
func (x *callEnv) build(c Call) ([]built, error) {
	name := c.ToolName
	if !safeActionName(name) || reservedActions[name] {
		return nil, badInput("tool name %q is not allowed", name)
	}
	agent := c.Agent
	if agent == "" {
		agent = "claude"
	}
	principal := types.NewEntityUID(agentType, str(agent))
	server, method, isMCP := splitMCP(name)
	var in toolInput
	var args any // an MCP tool's arguments
	raw := bytes.TrimSpace(c.ToolInput)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return nil, badInput("tool_input is not a JSON object")
		}
		// An MCP tool's arguments are the server's: a "path" may be a
		// list, a "command" an array; only the agents' tools have the
		// field types of toolInput.
		var err error
		if isMCP {
			err = json.Unmarshal(raw, &args)
		} else {
			err = json.Unmarshal(raw, &in)
		}
		if err != nil {
			return nil, badInput("tool_input: %v", oneLine(err.Error()))
		}
	}
	base := types.RecordMap{
		"tool":        str(name),
		"cwd":         str(x.cwd),
		"project_dir": str(x.project),
	}
	with := func(extra types.RecordMap) types.Record {
		m := make(types.RecordMap, len(base)+len(extra))
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return types.NewRecord(m)
	}
	var out []built
	tooMany := false
	planted := "" // set while the requests of planted commands are built
	add := func(action string, resource types.EntityUID, ctx types.Record) {
		if len(out) >= maxRequests {
			tooMany = true
			return
		}
		uid := actionUID(action)
		_, declared := x.e.actions[uid]
		out = append(out, built{
			req:      cedar.Request{Principal: principal, Action: uid, Resource: resource, Context: ctx},
			declared: declared,
			planted:  planted,
		})
	}
	var shellReqs func(command string) error
	fileReq := func(action, p string, viaShell bool) error {
		uid, err := x.fileEntity(p)
		if err != nil {
			return badInput("%s: %v", action, err)
		}
		fctx := with(types.RecordMap{"via_shell": types.Boolean(viaShell)})
		add(action, uid, fctx)
		if action == "Read" || action == "Glob" || action == "Grep" || action == "LS" {
			return nil
		}
		// A file that is code: its own action, and the commands its
		// format says will run analysed like a Bash call.
		kind := x.codeKind(string(uid.ID))
		if kind == "" && !viaShell && planted == "" && strings.Contains(in.written(), "//go:generate") {
			kind = ActionWriteBuildFile // a generator go generate runs
		}
		if kind == "" {
			return nil
		}
		add(kind, uid, fctx)
		if viaShell || planted != "" {
			return nil
		}
		planted = string(uid.ID)
		defer func() { planted = "" }()
		for _, c := range plantedCommands(planted, kind, in.written()) {
			// A command the gate cannot analyse (make's own syntax)
			// is left to the run that follows; only what it can
			// analyse and the policy forbids refuses the write.
			n := len(out)
			if err := shellReqs(c); err != nil {
				out = out[:n]
			}
		}
		return nil
	}

	shellReqs = func(command string) error {
		cwd := x.cwd
		if planted != "" {
			cwd = x.project // planted commands run in the project
		}
		sh, err := shell.Analyze(command, x.home, cwd, x.project)
		if err != nil {
			return err
		}
		files := func(writes, reads []string) error {
			for _, p := range writes {
				if err := fileReq("Write", p, true); err != nil {
					return err
				}
			}
			for _, p := range reads {
				if err := fileReq("Read", p, true); err != nil {
					return err
				}
			}
			return nil
		}
		for _, cmd := range sh.Commands {
			ctx := execContext(cmd)
			// A program named by its path inside the project is the
			// project's own code, like its Makefile (./gradlew, ./x.sh);
			// the file is also a read, so the file rules see it.
			inProject := len(cmd.ProgramFiles) > 0
			for _, p := range cmd.ProgramFiles {
				uid, err := x.fileEntity(p)
				if err != nil {
					return badInput("Bash: %v", err)
				}
				if v, _ := x.ents[uid].Attributes.Get("in_project"); v != types.Boolean(true) {
					inProject = false
				}
			}
			ctx["program_in_project"] = types.Boolean(inProject)
			add("ExecCommand", x.programEntity(cmd), with(ctx))
			if err := files(nil, cmd.ProgramFiles); err != nil {
				return err
			}
			if err := files(cmd.Writes, cmd.Reads); err != nil {
				return err
			}
		}
		return files(sh.Writes, sh.Reads)
	}

	switch name {
	case "Read", "Write", "Edit", "MultiEdit":
		if in.FilePath == "" {
			return nil, badInput("%s: tool_input has no file_path", name)
		}
		return out, fileReq(name, in.FilePath, false)
	case "NotebookEdit":
		p := in.NotebookPath
		if p == "" {
			p = in.FilePath
		}
		if p == "" {
			return nil, badInput("NotebookEdit: tool_input has no notebook_path")
		}
		return out, fileReq(name, p, false)
	case "LS":
		if in.Path == "" {
			return nil, badInput("LS: tool_input has no path")
		}
		return out, fileReq(name, in.Path, false)
	case "Grep":
		p := in.Path
		if p == "" {
			p = "."
		}
		if err := fileReq(name, p, false); err != nil {
			return nil, err
		}
		// A glob filter names the files whose contents are searched
		// (".env*"): check it as a file under the path too.
		if in.Glob != "" {
			for _, g := range expandBraces(in.Glob, 64) {
				if !filepath.IsAbs(g) && !strings.HasPrefix(g, "~") {
					g = filepath.Join(p, g)
				}
				if err := fileReq(name, g, false); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	case "Glob":
		base := in.Path
		if base == "" {
			base = "."
		}
		// The resource is the literal directory prefix of the joined
		// pattern (a pattern can leave its base: "../../**", "/etc/*"),
		// and the pattern itself is checked as a file too, so that
		// ".env*" or "**/*.pem" meet the rules about file names (some
		// agents read every file a glob matches).
		var pats []string
		for _, pat := range expandBraces(in.Pattern, 64) {
			if pat == "" {
				continue
			}
			if !filepath.IsAbs(pat) && !strings.HasPrefix(pat, "~") {
				pat = filepath.Join(base, pat)
			}
			pats = append(pats, pat)
		}
		if len(pats) == 0 {
			return out, fileReq(name, base, false)
		}
		for _, pat := range pats {
			if err := fileReq(name, globPrefix(pat), false); err != nil {
				return nil, err
			}
			if pre := globPrefix(pat); pre != pat {
				if err := fileReq(name, pat, false); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	case "Bash":
		if strings.TrimSpace(in.Command) == "" {
			return nil, badInput("Bash: tool_input has no command")
		}
		add("Bash", types.NewEntityUID(toolType, "Bash"), with(types.RecordMap{
			"command":     str(in.Command),
			"description": str(in.Description),
		}))
		if err := shellReqs(in.Command); err != nil {
			return nil, err
		}
		if tooMany {
			return nil, badInput("Bash: command line needs more than %d policy requests", maxRequests)
		}
		return out, nil
	case "WebFetch":
		uid, err := x.urlEntity(in.URL)
		if err != nil {
			return nil, &urlError{err.Error()}
		}
		add(name, uid, with(types.RecordMap{"prompt": str(in.Prompt)}))
		return out, nil
	}

	tool := types.NewEntityUID(toolType, str(name))
	if isMCP {
		input := "{}"
		if len(raw) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, raw) == nil {
				input = buf.String()
			}
		}
		uid := actionUID(name)
		if _, ok := x.e.actions[uid]; !ok {
			x.dynEntity(uid, actionUID(mcpPrefix+server), actionUID("Mcp"))
		}
		var m MCPContext
		if c.MCP != nil {
			m = *c.MCP
		}
		add(name, tool, with(types.RecordMap{
			"server":         str(server),
			"method":         str(method),
			"input":          str(input),
			"server_command": str(m.ServerCommand),
			"server_info":    str(m.ServerInfo),
			"high_impact":    types.Boolean(m.HighImpact),
			"pic": types.NewRecord(types.RecordMap{
				"present":          types.Boolean(m.PIC.Present),
				"verified":         types.Boolean(m.PIC.Verified),
				"impact":           str(m.PIC.Impact),
				"trusted":          types.Boolean(m.PIC.Verified && len(m.PIC.Trusted) > 0),
				"trusted_evidence": strSet(m.PIC.Trusted),
			}),
		}))
		// The files and URLs its arguments name, as the agents' own
		// Read, Write and WebFetch requests.
		refs, err := x.mcpArgRefs(method, args, m.InputSchema)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if r.action != "WebFetch" {
				if err := fileReq(r.action, r.target, false); err != nil {
					return nil, err
				}
				continue
			}
			uid, err := x.urlEntity(r.target)
			if err != nil {
				return nil, &urlError{fmt.Sprintf("argument %q: %v", r.arg, err)}
			}
			add("WebFetch", uid, with(types.RecordMap{"prompt": str("")}))
		}
		if tooMany {
			return nil, badInput("%s: arguments need more than %d policy requests", name, maxRequests)
		}
		return out, nil
	}
	add(name, tool, with(nil))
	return out, nil
}

func (x *callEnv) dynEntity(uid types.EntityUID, parents ...types.EntityUID) {
	if x.dyn == nil {
		x.dyn = make(map[types.EntityUID]types.Entity)
	}
	x.dyn[uid] = types.Entity{UID: uid, Parents: types.NewEntityUIDSet(parents...)}
}

type urlError struct{ msg string }

func (e *urlError) Error() string { return e.msg }

// expandBraces expands {a,b} alternatives in a glob, up to max results.
func expandBraces(g string, max int) []string {
	i := strings.IndexByte(g, '{')
	if i < 0 || max <= 1 {
		return []string{g}
	}
	depth, j := 0, i
	var alts []string
	start := i + 1
	for ; j < len(g); j++ {
		switch g[j] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 1 {
				alts = append(alts, g[start:j])
				start = j + 1
			}
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(g) {
		return []string{g} // unbalanced: taken literally
	}
	alts = append(alts, g[start:j])
	var out []string
	for _, a := range alts {
		for _, e := range expandBraces(g[:i]+a+g[j+1:], max-len(out)) {
			if len(out) >= max {
				return out
			}
			out = append(out, e)
		}
	}
	return out
}

// globPrefix returns the directory part of a glob pattern before its first
// component with a glob character.
func globPrefix(pattern string) string {
	i := strings.IndexAny(pattern, "*?[{")
	if i < 0 {
		return pattern
	}
	j := strings.LastIndexByte(pattern[:i], '/')
	if j < 0 {
		return "."
	}
	if j == 0 {
		return "/"
	}
	return pattern[:j]
}

func (x *callEnv) programEntity(cmd shell.Command) types.EntityUID {
	uid := types.NewEntityUID(programType, str(cmd.Name))
	x.ents[uid] = types.Entity{
		UID:        uid,
		Attributes: types.NewRecord(types.RecordMap{"name": str(cmd.Name)}),
	}
	return uid
}

func strSet(xs []string) types.Set {
	vs := make([]types.Value, len(xs))
	for i, s := range xs {
		vs[i] = str(s)
	}
	return types.NewSet(vs...)
}

// execContext is the ExecCommand context of one simple command.
func execContext(cmd shell.Command) types.RecordMap {
	var flags []string
	sub := ""
	opts := true
	skipNext := false
	for _, a := range cmd.Args {
		switch {
		case skipNext:
			skipNext = false
		case opts && a == "--":
			opts = false
		case opts && strings.HasPrefix(a, "--") && len(a) > 2:
			f, _, _ := strings.Cut(a, "=")
			flags = appendUniq(flags, f)
		case opts && strings.HasPrefix(a, "-") && len(a) > 1:
			flags = appendUniq(flags, a)
			for _, r := range a[1:] {
				flags = appendUniq(flags, "-"+string(r))
			}
			// git -C dir / -c k=v take an argument before the subcommand.
			if cmd.Name == "git" && sub == "" && (a == "-C" || a == "-c") {
				skipNext = true
			}
		case sub == "":
			sub = a
		}
	}
	flags = appendUniq(flags, cmd.Flags...)
	line := strings.Join(append([]string{cmd.Path}, cmd.Args...), " ")
	return types.RecordMap{
		"command":         str(line),
		"program_path":    str(cmd.Path),
		"args":            strSet(cmd.Args),
		"args_string":     str(strings.Join(cmd.Args, " ")),
		"argc":            types.Long(len(cmd.Args)),
		"flags":           strSet(flags),
		"subcommand":      str(sub),
		"has_inline_code": types.Boolean(cmd.Inline),
		"stdin_code":      types.Boolean(cmd.StdinCode),
		"dynamic_args":    types.Boolean(cmd.Dynamic),
		"dynamic_paths":   types.Boolean(cmd.DynamicPaths),
		"pipeline":        strSet(cmd.Pipeline),
		"wrappers":        strSet(cmd.Wrappers),
		"env":             strSet(cmd.Env),
		"env_tool":        strSet(toolVars(cmd.Env)),
		"unmodelled":      strSet(cmd.Unmodelled),
	}
}

// toolVars are the variables of env that some program or the shell
// interprets; the others are applications' settings (DATABASE_URL).
func toolVars(env []string) []string {
	var out []string
	for _, v := range env {
		if shell.ToolVariable(v) {
			out = append(out, v)
		}
	}
	return out
}

var errNilEngine = errors.New("no policy loaded")
