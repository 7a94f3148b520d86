package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/docketlog/docket/policy/internal/shell"
)

// Files that are code (issue 22). Writing one becomes, besides the Write
// request, a request with an action of its own, so the policy, the
// receipts and the audit can tell it apart:
//
//   - Action::"WriteBuildFile": a build, test or package manifest that the
//     agent's own tools run (Makefile, package.json, build.rs, conftest.py,
//     …). Everyday work: the default policy allows it, and the run that
//     follows happens under the agent's own gate and confinement.
//   - Action::"WriteAutorunFile": a file that runs later outside the
//     agent's confinement, started by something else (git hooks, also
//     under a configured core.hooksPath such as husky's; an editor's
//     auto-run tasks; direnv; shell startup files; other agents' hook and
//     MCP configuration; Python .pth files). The default policy asks, and
//     denies for agents' and Docket's own configuration.
//
// Both actions are in FileWrite, so policies written before them permit
// them wherever they permit writing the file.
//
// Where the file's format says what will run, the planted commands are
// analysed like a Bash call (see plantedCommands); a write planting a
// command the policy forbids is denied.
const (
	ActionWriteBuildFile   = "WriteBuildFile"
	ActionWriteAutorunFile = "WriteAutorunFile"
)

// autorunDirs are project directories whose files run outside the agent
// (relative, lower case, with a trailing slash), and autorunFiles files.
var (
	autorunDirs = []string{".git/hooks/", ".husky/", ".githooks/", ".devcontainer/", ".gemini/", ".codex/", ".cursor/",
		".windsurf/", ".amazonq/", ".continue/", ".roo/", ".kiro/", ".idea/", ".claude/", ".docket/"}
	autorunFiles = map[string]bool{".vscode/tasks.json": true, ".vscode/settings.json": true, ".vscode/mcp.json": true,
		".vscode/extensions.json": false, ".mcp.json": true, ".envrc": true, ".aider.conf.yml": true, ".gitattributes": false}
	homeAutorun = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
		".zlogin", ".config/fish/", ".config/autostart/", ".config/systemd/", ".local/bin/", ".gemini/", ".codex/", ".cursor/",
		".claude/", ".docket/", ".config/git/", ".gitconfig", ".ssh/rc", ".npmrc", ".pythonrc", ".inputrc"}
)

// codeKind classifies the file at the clean absolute path abs: the new
// action its write adds, or "".
func (x *callEnv) codeKind(abs string) string {
	real := x.links.real(abs, 0)
	lowerBase := strings.ToLower(filepath.Base(real))
	if strings.HasSuffix(lowerBase, ".pth") {
		return ActionWriteAutorunFile // run by every Python start
	}
	if x.realProject != "" && within(real, x.realProject) {
		rel, err := filepath.Rel(x.realProject, real)
		if err != nil {
			return ""
		}
		rel = strings.ToLower(filepath.ToSlash(rel))
		if autorunFiles[rel] {
			return ActionWriteAutorunFile
		}
		for _, d := range append(autorunDirs, x.hooksPath()...) {
			if strings.HasPrefix(rel+"/", d) {
				return ActionWriteAutorunFile
			}
		}
		if shell.BuildFile(rel) || strings.HasPrefix(rel, ".github/workflows/") {
			return ActionWriteBuildFile
		}
		return ""
	}
	if x.realHome != "" && within(real, x.realHome) {
		rel, err := filepath.Rel(x.realHome, real)
		if err != nil {
			return ""
		}
		rel = filepath.ToSlash(rel)
		for _, h := range homeAutorun {
			if rel == strings.TrimSuffix(h, "/") || strings.HasSuffix(h, "/") && strings.HasPrefix(rel, h) {
				return ActionWriteAutorunFile
			}
		}
	}
	return ""
}

// hooksPath returns the project's configured core.hooksPath, relative and
// lower case with a trailing slash, read from .git/config (nil if none).
func (x *callEnv) hooksPath() []string {
	if x.hooks != nil {
		return *x.hooks
	}
	var out []string
	x.hooks = &out
	if x.realProject == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(x.realProject, ".git", "config"))
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if !filepath.IsAbs(v) {
			v = filepath.Join(x.realProject, v)
		}
		if rel, err := filepath.Rel(x.realProject, filepath.Clean(v)); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
			out = append(out, strings.ToLower(filepath.ToSlash(rel))+"/")
		}
	}
	return out
}

// codeRE holds the expressions that find the commands planted in files
// that are code, compiled at first use: a hook process that writes no such
// file (most) never compiles them, and compiling the eight took a tenth of
// package policy's initialisation.
var codeRE = sync.OnceValue(func() *codeExprs {
	return &codeExprs{
		goGenerate:   regexp.MustCompile(`(?m)^//go:generate\s+(.+)$`),
		jsonPair:     regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:\s*"((?:[^"\\]|\\.)*)"`),
		yamlEntry:    regexp.MustCompile(`(?m)^\s*-?\s*(?:entry|run|command|cmd|script)\s*:\s*(.+)$`),
		makeRecipe:   regexp.MustCompile(`(?m)^\t+(.+)$`),
		makeRuleCmd:  regexp.MustCompile(`(?m)^[^\t#=\n]*:[^=\n]*;(.+)$`),
		makeShell:    regexp.MustCompile(`\$[({]shell ([^)}]+)[)}]`),
		justRecipe:   regexp.MustCompile(`(?m)^(?: {2,}|\t)(.+)$`),
		makeVariable: regexp.MustCompile(`\$[({][^)}]*[)}]|\$[@<^?*%]`),
	}
})

type codeExprs struct {
	goGenerate, jsonPair, yamlEntry, makeRecipe, makeRuleCmd, makeShell, justRecipe, makeVariable *regexp.Regexp
}

// plantedCommands returns the shell commands a file's content says will
// run, by the file's format: Makefile recipes, package.json scripts,
// pre-commit entries, tasks.json commands, //go:generate lines, and whole
// shell hooks and startup files.
func plantedCommands(abs, kind, content string) []string {
	if content == "" {
		return nil
	}
	base := strings.ToLower(filepath.Base(abs))
	var out []string
	for _, m := range codeRE().goGenerate.FindAllStringSubmatch(content, -1) {
		out = append(out, m[1])
	}
	switch {
	case base == "makefile" || base == "gnumakefile" || strings.HasSuffix(base, ".mk"):
		var raw []string
		for _, m := range codeRE().makeRecipe.FindAllStringSubmatch(content, -1) {
			raw = append(raw, m[1])
		}
		for _, m := range codeRE().makeRuleCmd.FindAllStringSubmatch(content, -1) {
			raw = append(raw, m[1])
		}
		for _, m := range codeRE().makeShell.FindAllStringSubmatch(content, -1) {
			raw = append(raw, m[1])
		}
		for _, r := range raw {
			r = strings.TrimLeft(strings.TrimSpace(r), "@-+")
			r = codeRE().makeVariable.ReplaceAllString(r, "x") // make's own variables
			out = append(out, strings.ReplaceAll(r, "$$", "$"))
		}
	case base == "justfile":
		for _, m := range codeRE().justRecipe.FindAllStringSubmatch(content, -1) {
			out = append(out, strings.TrimLeft(strings.TrimSpace(m[1]), "@-"))
		}
	case base == "package.json" || base == "tasks.json" || base == "settings.json" || base == "mcp.json" || base == ".mcp.json" || base == "deno.json":
		out = append(out, jsonCommands(content)...)
	case strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml"):
		for _, m := range codeRE().yamlEntry.FindAllStringSubmatch(content, -1) {
			v := strings.TrimSpace(m[1])
			if u, err := unquoteYAML(v); err == nil {
				v = u
			}
			out = append(out, v)
		}
	case kind == ActionWriteAutorunFile && !strings.HasSuffix(base, ".json") && !strings.HasSuffix(base, ".toml") && !strings.HasSuffix(base, ".pth"):
		out = append(out, content) // a hook or startup file is a shell script
	}
	return out
}

// jsonCommands returns the string values of a JSON document (or of the
// "key": "value" pairs of a fragment an Edit inserts): scripts, commands
// and arguments are among them, and the others analyse as harmless or
// unknown programs, which only ask.
func jsonCommands(content string) []string {
	var out []string
	var v any
	if json.Unmarshal([]byte(content), &v) == nil {
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case string:
				out = append(out, v)
			}
		}
		walk(v)
		return out
	}
	for _, m := range codeRE().jsonPair.FindAllStringSubmatch(content, -1) {
		var s string
		if json.Unmarshal([]byte(`"`+m[2]+`"`), &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func unquoteYAML(v string) (string, error) {
	if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'') {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'"), nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var s string
		err := json.Unmarshal([]byte(v), &s)
		return s, err
	}
	return v, nil
}
