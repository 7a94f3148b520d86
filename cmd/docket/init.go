package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const initUsage = `Usage:
    docket init [options]

Sets up Docket in the project ($CLAUDE_PROJECT_DIR, else the current
directory), keeping whatever is already there:

    .docket/issuer.key         a new Ed25519 issuer key (mode 0600)
    .docket/policy/docket.cedar  the default policy, if there is no policy yet
    .docket/config.json        the log to submit receipts to (with -log)
    .claude/settings.json      PreToolUse, PostToolUse, PostToolUseFailure,
                               SessionStart and SessionEnd hooks, merged into
                               the existing settings
    .gitignore                 the key, sessions, proofs and spool

Running it again changes nothing that is already set up.

Options:
    -log URL               submit receipts to this docket-log
    -log-key VKEY          the log's checkpoint key (note vkey); needed with -log
    -witness-policy FILE   C2SP tlog-policy file of the witnesses proofs must satisfy
    -command CMD           the docket command hooks run (default: this binary)

Examples:
    docket init
    docket init -log https://log.example.com -log-key 'log.example.com+1234abcd+AQ…'
`

// hookEvents are the Claude Code events docket init installs, with the
// docket hook each runs and whether it takes a tool matcher.
var hookEvents = []struct {
	event   string
	kind    hook.Kind
	matcher bool
}{
	{"PreToolUse", hook.Pre, true},
	{"PostToolUse", hook.Post, true},
	{"PostToolUseFailure", hook.PostFailure, true},
	{"SessionStart", hook.SessionStart, false},
	{"SessionEnd", hook.SessionEnd, false},
}

// hookTimeout is the timeout, in seconds, docket init gives the hooks. It
// must exceed hook.DefaultDeadline, so that the pre hook blocks before the
// agent gives up on it (and lets the call run).
const hookTimeout = 30

// gitignoreLines are the .docket paths that stay out of version control.
var gitignoreLines = []string{
	"/.docket/issuer.key", "/.docket/sessions/", "/.docket/proofs/", "/.docket/spool/",
}

func runInit(args []string) int {
	fs := flag.NewFlagSet("docket init", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, initUsage) }
	logURL := fs.String("log", "", "")
	logKey := fs.String("log-key", "", "")
	witness := fs.String("witness-policy", "", "")
	command := fs.String("command", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		errorf("init: unexpected arguments %q", fs.Args())
		return 2
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf("%v", err)
		return 2
	}
	s := store.Open(project)
	if *command == "" {
		exe, err := os.Executable()
		if err != nil {
			errorf("init: finding the docket binary: %v", err)
			hintf("pass -command with the absolute path of docket")
			return 2
		}
		*command = shellQuote(exe)
	}

	steps := []func() (string, error){
		func() (string, error) { return initKey(s) },
		func() (string, error) { return initPolicy(s) },
		func() (string, error) { return initConfig(s, *logURL, *logKey, *witness) },
		func() (string, error) { return initSettings(project, *command) },
		func() (string, error) { return initGitignore(project) },
	}
	for _, step := range steps {
		msg, err := step()
		if err != nil {
			errorf("init: %v", err)
			return 2
		}
		if msg != "" {
			fmt.Println(msg)
		}
	}
	fmt.Printf("docket is set up in %s; run docket doctor to check that the gate blocks\n", project)
	return 0
}

func initKey(s *store.Store) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", err
	}
	if _, err := os.Stat(s.KeyPath()); err == nil {
		priv, err := receipts.LoadPrivateKey(s.KeyPath())
		if err != nil {
			return "", fmt.Errorf("existing issuer key: %w", err)
		}
		return "kept issuer key " + receipts.NewKeyFile(priv).KID, nil
	}
	_, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(s.KeyPath(), kf); err != nil {
		return "", fmt.Errorf("writing issuer key: %w", err)
	}
	return "wrote issuer key " + kf.KID + " to " + rel(s.Project, s.KeyPath()), nil
}

func initPolicy(s *store.Store) (string, error) {
	if err := os.MkdirAll(s.PolicyDir(), 0o755); err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(s.PolicyDir(), "*.cedar"))
	if len(matches) > 0 {
		eng, err := policy.LoadDir(s.PolicyDir())
		if err != nil {
			return "", fmt.Errorf("existing policy does not load (every call would be denied): %w", err)
		}
		return "kept policy " + eng.Digest(), nil
	}
	path := filepath.Join(s.PolicyDir(), policy.DefaultName)
	if err := os.WriteFile(path, policy.Default, 0o644); err != nil {
		return "", fmt.Errorf("writing policy: %w", err)
	}
	return "wrote default policy to " + rel(s.Project, path), nil
}

func initConfig(s *store.Store, logURL, logKey, witness string) (string, error) {
	if logURL == "" && logKey == "" && witness == "" {
		return "", nil
	}
	if witness != "" {
		abs, err := filepath.Abs(witness)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("witness policy: %w", err)
		}
		if r, err := filepath.Rel(s.Project, abs); err == nil && !strings.HasPrefix(r, "..") {
			abs = r // keep the configuration movable with the project
		}
		witness = abs
	}
	c := store.Config{LogURL: logURL, LogKey: logKey, WitnessPolicy: witness}
	if err := s.WriteConfig(c); err != nil {
		return "", err
	}
	return "wrote " + rel(s.Project, s.ConfigPath()) + " (log " + logURL + ")", nil
}

// initSettings merges docket's hooks into .claude/settings.json. Existing
// settings and hooks are kept; an event that already runs `docket hook
// <kind>` is left alone.
func initSettings(project, command string) (string, error) {
	path := filepath.Join(project, ".claude", "settings.json")
	settings, mode, err := readSettings(path)
	if err != nil {
		return "", err
	}
	hooks, ok := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !ok {
		return "", fmt.Errorf("%s: hooks is not an object; fix it by hand", path)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	var added []string
	for _, h := range hookEvents {
		groups, ok := hooks[h.event].([]any)
		if hooks[h.event] != nil && !ok {
			return "", fmt.Errorf("%s: hooks.%s is not an array; fix it by hand", path, h.event)
		}
		if len(hookCommands(groups, "", string(h.kind))) > 0 {
			continue
		}
		group := map[string]any{
			"hooks": []any{map[string]any{
				"type":    "command",
				"command": command + " hook " + string(h.kind),
				"timeout": hookTimeout,
			}},
		}
		if h.matcher {
			group["matcher"] = "*"
		}
		hooks[h.event] = append(groups, group)
		added = append(added, h.event)
	}
	if len(added) == 0 {
		return "kept hooks in " + rel(project, path), nil
	}
	settings["hooks"] = hooks
	data, err := jsonIndent(settings)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := durable.WriteFile(path, data, mode); err != nil {
		return "", err
	}
	return fmt.Sprintf("added %s hooks to %s", strings.Join(added, ", "), rel(project, path)), nil
}

// readSettings reads a Claude Code settings file. A missing file is empty
// settings; a file that is not a JSON object is an error, never overwritten.
func readSettings(path string) (map[string]any, fs.FileMode, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, 0o644, nil
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	m, err := receipts.ParseObject(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %v; not changing it", path, err)
	}
	return m, fi.Mode().Perm(), nil
}

// settingsHook is one command hook found in settings.
type settingsHook struct {
	Matcher string
	Command string
	Timeout int
}

// hookCommands returns the command hooks of an event's groups that run
// `docket hook <kind>` (any docket binary) and whose matcher covers tool
// (every matcher when tool is "").
func hookCommands(groups []any, tool, kind string) []settingsHook {
	var out []settingsHook
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		matcher, _ := gm["matcher"].(string)
		if tool != "" && !matcherCovers(matcher, tool) {
			continue
		}
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			cmd, _ := hm["command"].(string)
			if hm["type"] != "command" || !runsDocketHook(cmd, kind) {
				continue
			}
			sh := settingsHook{Matcher: matcher, Command: cmd}
			if t, ok := hm["timeout"].(interface{ Int64() (int64, error) }); ok {
				n, _ := t.Int64()
				sh.Timeout = int(n)
			}
			out = append(out, sh)
		}
	}
	return out
}

// runsDocketHook reports whether a hook command line runs `docket hook kind`
// (any binary whose name contains "docket", or this very binary).
func runsDocketHook(cmd, kind string) bool {
	if exe, err := os.Executable(); err == nil && strings.TrimSpace(cmd) == shellQuote(exe)+" hook "+kind {
		return true
	}
	f := strings.Fields(cmd)
	for i := 0; i+2 < len(f); i++ {
		if strings.Contains(filepath.Base(strings.Trim(f[i], `'"`)), "docket") && f[i+1] == "hook" && f[i+2] == kind {
			return true
		}
	}
	return false
}

// matcherCovers reports whether a Claude Code matcher selects tool: empty
// and "*" match everything; otherwise alternatives separated by "|" are
// compared exactly (regular expressions are treated as not covering).
func matcherCovers(matcher, tool string) bool {
	if matcher == "" || matcher == "*" || matcher == ".*" {
		return true
	}
	for _, m := range strings.Split(matcher, "|") {
		if strings.TrimSpace(m) == tool {
			return true
		}
	}
	return false
}

func initGitignore(project string) (string, error) {
	path := filepath.Join(project, ".gitignore")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range gitignoreLines {
		if !have[l] && !have[strings.TrimPrefix(l, "/")] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# docket: the issuer key and local receipt state\n")
	for _, l := range add {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return "added " + strings.Join(add, " ") + " to .gitignore", nil
}

// jsonIndent encodes v as indented JSON without HTML escaping.
func jsonIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}

// shellQuote quotes s for sh when it needs quoting.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
