package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/receipts"
)

// HookTimeout is the timeout, in seconds, installed hooks are given. It
// must exceed DefaultDeadline, so that the pre hook blocks before the agent
// gives up on it (and lets the call run).
const HookTimeout = 30

// InstallEvent is an agent event `docket init` installs a hook for.
type InstallEvent struct {
	Event string // the agent's event name
	Kind  Kind   // the docket hook it runs
	// Matcher: the event takes a tool matcher ("*" is installed).
	Matcher bool
	// MaxTimeout, if set, is the longest timeout the agent allows for the
	// event, in seconds: it is installed instead of HookTimeout.
	MaxTimeout int
}

// Installs returns where an agent's project hooks are configured, relative
// to the project, and the events Docket installs there. All three agents
// keep hooks in Claude Code's shape ({"hooks": {event: [{matcher, hooks:
// [{type, command, timeout}]}]}); see [Agent.TimeoutUnit] for the unit of
// the timeout.
//
// Gemini CLI has no failure event (a failed call is an ordinary
// AfterTool) and Codex none either (an ordinary PostToolUse): their post
// hook records a failure from the tool response (see [ParseEvent]).
func (a Agent) Installs() (path string, events []InstallEvent, err error) {
	switch a {
	case Claude:
		return filepath.Join(".claude", "settings.json"), []InstallEvent{
			{Event: receipts.PreToolUse, Kind: Pre, Matcher: true},
			{Event: receipts.PostToolUse, Kind: Post, Matcher: true},
			{Event: receipts.PostToolUseFailure, Kind: PostFailure, Matcher: true},
			{Event: receipts.SessionStart, Kind: SessionStart},
			{Event: receipts.SessionEnd, Kind: SessionEnd},
			// Reconciliation of the transcript so far (package reconcile).
			{Event: "Stop", Kind: Stop},
			{Event: "SubagentStop", Kind: Stop},
		}, nil
	case Gemini:
		return filepath.Join(".gemini", "settings.json"), []InstallEvent{
			{Event: "BeforeTool", Kind: Pre, Matcher: true},
			{Event: "AfterTool", Kind: Post, Matcher: true},
			{Event: receipts.SessionStart, Kind: SessionStart},
			{Event: receipts.SessionEnd, Kind: SessionEnd},
		}, nil
	case Codex:
		return filepath.Join(".codex", "hooks.json"), []InstallEvent{
			{Event: receipts.PreToolUse, Kind: Pre, Matcher: true},
			{Event: receipts.PostToolUse, Kind: Post, Matcher: true},
			{Event: receipts.SessionStart, Kind: SessionStart},
			// Codex clamps a SessionEnd hook to 3 s (and warns at every start).
			{Event: receipts.SessionEnd, Kind: SessionEnd, MaxTimeout: 3},
		}, nil
	}
	return "", nil, fmt.Errorf("installing %s hooks is not supported", a)
}

// TimeoutUnit is the unit of the "timeout" of the agent's hooks: Gemini
// CLI counts milliseconds, Claude Code and Codex seconds.
func (a Agent) TimeoutUnit() time.Duration {
	if a == Gemini {
		return time.Millisecond
	}
	return time.Second
}

// PreEvent is the agent's name for the event the pre hook runs on.
func (a Agent) PreEvent() string {
	if a == Gemini {
		return "BeforeTool"
	}
	return receipts.PreToolUse
}

// ShellTool is the name the agent gives its shell tool in hook events.
func (a Agent) ShellTool() string {
	if a == Gemini {
		return "run_shell_command"
	}
	return "Bash"
}

// Settings is an agent's settings file with hooks in Claude Code's shape: a
// JSON object whose "hooks" member maps event names to groups
// {"matcher", "hooks": [{"type": "command", "command", "timeout"}]}.
// Everything else in the file is kept as it is.
type Settings struct {
	Path string
	Mode fs.FileMode
	m    map[string]any
}

// ReadSettings reads a settings file. A missing file is empty settings; a
// file that is not a JSON object is an error, never overwritten.
func ReadSettings(path string) (*Settings, error) {
	s := &Settings{Path: path, Mode: 0o644, m: map[string]any{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if s.m, err = receipts.ParseObject(data); err != nil {
		return nil, fmt.Errorf("%s: %v; not changing it", path, err)
	}
	s.Mode = fi.Mode().Perm()
	return s, nil
}

// hooks returns the settings' hooks object.
func (s *Settings) hooks() (map[string]any, error) {
	hooks, ok := s.m["hooks"].(map[string]any)
	if s.m["hooks"] != nil && !ok {
		return nil, fmt.Errorf("%s: hooks is not an object; fix it by hand", s.Path)
	}
	return hooks, nil
}

// Install adds a hook running `command hook <kind>` for every event of
// agent that does not run that docket hook yet, with a timeout of
// HookTimeout seconds in the agent's unit, and returns the events it added.
// Existing settings and hooks are kept. It changes s only; see Write.
func (s *Settings) Install(agent Agent, command string) ([]string, error) {
	_, events, err := agent.Installs()
	if err != nil {
		return nil, err
	}
	hooks, err := s.hooks()
	if err != nil {
		return nil, err
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	var added []string
	for _, h := range events {
		groups, ok := hooks[h.Event].([]any)
		if hooks[h.Event] != nil && !ok {
			return nil, fmt.Errorf("%s: hooks.%s is not an array; fix it by hand", s.Path, h.Event)
		}
		if len(commands(groups, "", h.Kind)) > 0 {
			continue
		}
		timeout := time.Duration(HookTimeout)
		if h.MaxTimeout > 0 {
			timeout = time.Duration(min(HookTimeout, h.MaxTimeout))
		}
		group := map[string]any{
			"hooks": []any{map[string]any{
				"type":    "command",
				"command": command + hookArgs(agent, h.Kind),
				"timeout": int((timeout * time.Second) / agent.TimeoutUnit()),
			}},
		}
		if h.Matcher {
			group["matcher"] = "*"
		}
		hooks[h.Event] = append(groups, group)
		added = append(added, h.Event)
	}
	if len(added) > 0 {
		s.m["hooks"] = hooks
	}
	return added, nil
}

// hookArgs are the arguments of `docket hook` for an agent's hook kind.
func hookArgs(agent Agent, kind Kind) string {
	if agent == Claude {
		return " hook " + string(kind)
	}
	return " hook " + string(kind) + " -agent " + string(agent)
}

// Write writes the settings back, durably, as indented JSON.
func (s *Settings) Write() error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s.m); err != nil {
		return err
	}
	return durable.WriteFile(s.Path, b.Bytes(), s.Mode)
}

// InstalledHook is one command hook found in settings.
type InstalledHook struct {
	Matcher string
	Command string
	Timeout int
}

// Installed returns the command hooks of an event that run `docket hook
// <kind>` (any docket binary) and whose matcher covers tool (every matcher
// when tool is "").
func (s *Settings) Installed(event, tool string, kind Kind) []InstalledHook {
	hooks, _ := s.m["hooks"].(map[string]any)
	groups, _ := hooks[event].([]any)
	return commands(groups, tool, kind)
}

func commands(groups []any, tool string, kind Kind) []InstalledHook {
	var out []InstalledHook
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
			ih := InstalledHook{Matcher: matcher, Command: cmd}
			switch t := hm["timeout"].(type) {
			case interface{ Int64() (int64, error) }:
				n, _ := t.Int64()
				ih.Timeout = int(n)
			case int:
				ih.Timeout = t
			}
			out = append(out, ih)
		}
	}
	return out
}

// runsDocketHook reports whether a hook command line runs `docket hook kind`
// (any binary whose name contains "docket", or this very binary).
func runsDocketHook(cmd string, kind Kind) bool {
	if exe, err := os.Executable(); err == nil && strings.TrimSpace(cmd) == ShellQuote(exe)+" hook "+string(kind) {
		return true
	}
	f := strings.Fields(cmd)
	for i := 0; i+2 < len(f); i++ {
		if strings.Contains(filepath.Base(strings.Trim(f[i], `'"`)), "docket") && f[i+1] == "hook" && f[i+2] == string(kind) {
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

// DefaultCommand is the docket command docket init writes into an agent's
// settings for the binary at exe: "docket" when the docket found on PATH is
// that very binary, so that the settings file, which a team commits, runs on
// every machine that has docket on its PATH; the quoted absolute path
// otherwise, which works here (doctor warns about it: HookProgram).
func DefaultCommand(exe string) string {
	if p, err := exec.LookPath("docket"); err == nil {
		a, errA := os.Stat(p)
		b, errB := os.Stat(exe)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "docket"
		}
	}
	return ShellQuote(exe)
}

// HookProgram returns the program a hook command line runs: its first
// word, unquoted when DefaultCommand quoted it.
func HookProgram(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	if rest, ok := strings.CutPrefix(cmd, "'"); ok {
		var b strings.Builder
		for {
			i := strings.Index(rest, "'")
			if i < 0 {
				return b.String() + rest
			}
			b.WriteString(rest[:i])
			rest = rest[i+1:]
			if r, ok := strings.CutPrefix(rest, `\''`); ok {
				b.WriteByte('\'')
				rest = r
				continue
			}
			return b.String()
		}
	}
	prog, _, _ := strings.Cut(cmd, " ")
	return prog
}

// ShellQuote quotes s for sh when it needs quoting.
func ShellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) < 0 && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
