package hook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/receipts"
)

// agentEvents are, for each agent, a pre-tool event the default policy
// allows, a post-tool event, and the -agent flag docket init writes.
var agentEvents = []struct {
	agent, flag, pre, post string
}{
	{"claude-code", "", "claude/pre-bash.json", "claude/post-bash.json"},
	{"gemini-cli", "gemini", "gemini/before-tool-shell.json", "gemini/after-tool-shell.json"},
	{"codex", "codex", "codex/pre-bash.json", "codex/post-bash.json"},
}

// misspellings are command lines of `docket hook` (after "hook") that do
// not say "pre" the way docket hook reads it: a hand-written hook
// configuration's typos, other cases, the agents' event names, extra or
// missing arguments, unknown flags and bad flag values.
var misspellings = [][]string{
	{},
	{"PreToolUse"},
	{"BeforeTool"},
	{"PRE"},
	{"Pre"},
	{"pre-tool-use"},
	{"pretooluse"},
	{"pre-tool"},
	{"before-tool"},
	{"pre "},
	{" pre"},
	{""},
	{"-pre"},
	{"--pre"},
	{"pre", "extra"},
	{"pre", "pre"},
	{"pre", "-nope"},
	{"pre", "--nope=1"},
	{"pre", "-agent"},
	{"pre", "-agent", "Claude"},
	{"pre", "-agent", "cursor"},
	{"pre", "-agent", ""},
	{"pre", "-agent", "claude", "-agent", "claude"},
	{"pre", "-deadline", "soon"},
	{"pre", "-deadline", "-1s"},
	{"pre", "-deadline", "0"},
	{"-h"},
	{"pre", "-help"},
	{"pre", "--", "extra"},
	{"PostToolUse"},
	{"post-tool-use"},
	{"session"},
}

// TestHookMisspelledPreBlocks is the attack of issue 20 §6: a pre-tool
// event given to a `docket hook` command line it cannot read must be
// blocked (exit 2, a reason on stderr, nothing on stdout), for every agent
// and every misspelling, where the agents run the call on exit 1. The
// events are ones the policy allows, so only the command line blocks them.
func TestHookMisspelledPreBlocks(t *testing.T) {
	p := newProject(t)
	for _, a := range agentEvents {
		event := p.fixture(t, a.pre, nil)
		// The control: the right command line allows the call.
		if r := p.run(t, event, nil, withAgent([]string{"hook", "pre"}, a.flag)...); r.code != 0 {
			t.Fatalf("docket hook pre (%s) = exit %d (%s), want 0: the event must be allowed", a.agent, r.code, r.stderr)
		}
		for _, args := range misspellings {
			for _, withFlag := range []bool{false, true} {
				if withFlag && a.flag == "" {
					continue
				}
				argv := append([]string{"hook"}, args...)
				if withFlag {
					argv = withAgent(argv, a.flag)
				}
				t.Run(fmt.Sprintf("%s/%q", a.agent, argv[1:]), func(t *testing.T) {
					r := p.run(t, event, nil, argv...)
					if r.code != 2 {
						t.Fatalf("docket %q < %s = exit %d (stderr %q), want 2", argv, a.pre, r.code, r.stderr)
					}
					if !strings.HasPrefix(r.stderr, "docket: ") || !strings.Contains(r.stderr, "blocked") {
						t.Fatalf("docket %q stderr = %q, want a reason saying the call is blocked", argv, r.stderr)
					}
					if help := slices.Contains(argv, "-h") || slices.Contains(argv, "-help"); !help && r.stdout != "" {
						t.Fatalf("docket %q stdout = %q, want nothing (an answer there could allow the call)", argv, r.stdout)
					}
				})
			}
		}
	}
}

func withAgent(argv []string, flag string) []string {
	if flag == "" {
		return argv
	}
	return append(argv, "-agent", flag)
}

// TestHookEventContradictsCommandLine: a hook whose event's
// hook_event_name disagrees with the command line blocks when a pre-tool
// event is involved (a post hook wired to the pre-tool event would let every
// call run ungated), and receipts post and session events as what they are.
func TestHookEventContradictsCommandLine(t *testing.T) {
	p := newProject(t)
	tests := []struct {
		name    string
		event   string
		rename  string // a hook_event_name to put in the event
		args    []string
		code    int
		receipt string // the hook_event of the receipt it must add, "" for none
		warn    bool   // a systemMessage warning about the hook command
	}{
		{"PreToolUse to post", "claude/pre-bash.json", "", []string{"post"}, 2, "", false},
		{"PreToolUse to post-failure", "claude/pre-bash.json", "", []string{"post-failure"}, 2, "", false},
		{"PreToolUse to session-start", "claude/pre-bash.json", "", []string{"session-start"}, 2, "", false},
		{"PreToolUse to session-end", "claude/pre-bash.json", "", []string{"session-end"}, 2, "", false},
		{"BeforeTool to gemini post", "gemini/before-tool-shell.json", "", []string{"post", "-agent", "gemini"}, 2, "", false},
		{"BeforeTool to pre -agent claude", "gemini/before-tool-shell.json", "", []string{"pre", "-agent", "claude"}, 2, "", false},
		{"BeforeTool to pre -agent codex", "gemini/before-tool-shell.json", "", []string{"pre", "-agent", "codex"}, 2, "", false},
		{"PreToolUse to pre -agent gemini", "claude/pre-bash.json", "", []string{"pre", "-agent", "gemini"}, 2, "", false},
		{"codex PreToolUse to pre -agent gemini", "codex/pre-bash.json", "", []string{"pre", "-agent", "gemini"}, 2, "", false},
		{"PostToolUse to pre", "claude/post-bash.json", "", []string{"pre"}, 2, "", false},
		{"an event docket does not handle, to pre", "claude/pre-bash.json", "PermissionRequest", []string{"pre"}, 2, "", false},
		{"an event docket does not handle, to post", "claude/post-bash.json", "Notification", []string{"post"}, 2, "", false},
		{"BeforeTool to pre, no -agent: Gemini CLI's", "gemini/before-tool-shell.json", "", []string{"pre"}, 0, "PreToolUse", false},
		{"-agent before the kind", "gemini/before-tool-shell.json", "", []string{"-agent", "gemini", "pre"}, 0, "PreToolUse", false},
		{"SessionStart to post", "claude/session-start.json", "", []string{"post"}, 0, "SessionStart", true},
		{"PostToolUseFailure to post", "claude/post-failure-bash.json", "", []string{"post"}, 0, "PostToolUseFailure", true},
		{"AfterTool to post, no -agent", "gemini/after-tool-shell.json", "", []string{"post"}, 0, "PostToolUse", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var edits map[string]any
			if tt.rename != "" {
				edits = map[string]any{"hook_event_name": tt.rename}
			}
			event := p.fixture(t, tt.event, edits)
			before := p.hookEvents(t)
			r := p.run(t, event, nil, append([]string{"hook"}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("docket hook %q < %s = exit %d (stderr %q), want %d", tt.args, tt.name, r.code, r.stderr, tt.code)
			}
			after := p.hookEvents(t)
			switch {
			case tt.code == 2:
				if !strings.Contains(r.stderr, "hook_event_name") || r.stdout != "" || after[""] != before[""] {
					t.Fatalf("docket hook %q = stderr %q, stdout %q, %d new receipts; want a reason naming hook_event_name, no answer, no receipt", tt.args, r.stderr, r.stdout, after[""]-before[""])
				}
			case after[""] != before[""]+1 || after[tt.receipt] != before[tt.receipt]+1:
				t.Fatalf("docket hook %q added %d receipts, %d of them %s (stderr %q), want 1", tt.args, after[""]-before[""], after[tt.receipt]-before[tt.receipt], tt.receipt, r.stderr)
			}
			var answer struct{ SystemMessage string }
			if err := json.Unmarshal([]byte(r.stdout), &answer); tt.warn && (err != nil || !strings.Contains(answer.SystemMessage, "hook_event_name")) {
				t.Fatalf("docket hook %q stdout = %q, want a systemMessage warning about the hook command", tt.args, r.stdout)
			}
			if !tt.warn && r.stdout != "" {
				t.Fatalf("docket hook %q stdout = %q, want nothing", tt.args, r.stdout)
			}
		})
	}
}

// TestHookMisspelledPostReceipted: a post or session event given to a
// command line that cannot be read is receipted as what its
// hook_event_name says (it cannot be blocked, and must not be lost), with a
// warning, and exit 0: never 1. Every agent's events, every misspelling
// but a help request (which prints the usage and exits 2).
func TestHookMisspelledPostReceipted(t *testing.T) {
	p := newProject(t)
	events := []struct{ agent, flag, fixture, hookEvent string }{
		{"claude-code", "", "claude/session-start.json", "SessionStart"},
		{"claude-code", "", "claude/session-end.json", "SessionEnd"},
	}
	for _, a := range agentEvents {
		// Its decision first, so that the first execution links to it.
		if r := p.run(t, p.fixture(t, a.pre, nil), nil, withAgent([]string{"hook", "pre"}, a.flag)...); r.code != 0 {
			t.Fatalf("docket hook pre (%s) = exit %d (%s)", a.agent, r.code, r.stderr)
		}
		events = append(events, struct{ agent, flag, fixture, hookEvent string }{a.agent, a.flag, a.post, "PostToolUse"})
	}
	for _, ev := range events {
		for _, args := range misspellings {
			if slices.Contains(args, "-h") || slices.Contains(args, "-help") {
				continue
			}
			for _, withFlag := range []bool{false, true} {
				if withFlag && ev.flag == "" {
					continue
				}
				argv := append([]string{"hook"}, args...)
				if withFlag {
					argv = withAgent(argv, ev.flag)
				}
				t.Run(fmt.Sprintf("%s/%s/%q", ev.agent, ev.hookEvent, argv[1:]), func(t *testing.T) {
					before := p.hookEvents(t)
					r := p.run(t, p.fixture(t, ev.fixture, nil), nil, argv...)
					if r.code != 0 || !strings.Contains(r.stderr, "docket: warning:") {
						t.Fatalf("docket %q < %s = exit %d (stderr %q), want 0 with a warning", argv, ev.fixture, r.code, r.stderr)
					}
					if after := p.hookEvents(t); after[""] != before[""]+1 || after[ev.hookEvent] != before[ev.hookEvent]+1 {
						t.Fatalf("docket %q added %d receipts, want 1 %s", argv, after[""]-before[""], ev.hookEvent)
					}
				})
			}
		}
	}
}

// TestHookWithoutProject: when the project cannot be found (Options.Err),
// a pre hook blocks and the others warn, exit 0.
func TestHookWithoutProject(t *testing.T) {
	p := newProject(t)
	for _, tt := range []struct {
		kind  hook.Kind
		event string
		code  int
	}{
		{hook.Pre, "claude/pre-bash.json", 2},
		{hook.Post, "claude/post-bash.json", 0},
		{hook.SessionStart, "claude/session-start.json", 0},
	} {
		var stdout, stderr strings.Builder
		code := hook.Run(t.Context(), hook.Options{Kind: tt.kind, Err: errors.New("finding the project directory: gone")},
			bytes.NewReader(p.fixture(t, tt.event, nil)), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), "finding the project directory: gone") {
			t.Errorf("Run(%s, no project) = %d, %q; want %d and the cause", tt.kind, code, stderr.String(), tt.code)
		}
	}
}

// hookEvents counts the receipts of every session chain of the project by
// their hook_event.
func (p *project) hookEvents(t *testing.T) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.dir, ".docket", "sessions", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range receipts.SplitLines(data) {
			var r struct{ Payload receipts.Payload }
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			n[r.Payload.HookEvent]++
			n[""]++
		}
	}
	return n
}

func TestParseInvocation(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		kind  hook.Kind
		agent hook.Agent
		err   string
	}{
		{"kind", []string{"pre"}, hook.Pre, "", ""},
		{"flags after", []string{"post", "-agent", "gemini", "-deadline", "1s"}, hook.Post, hook.Gemini, ""},
		{"flags before", []string{"-agent=codex", "session-end"}, hook.SessionEnd, hook.Codex, ""},
		{"double dash flag", []string{"--agent", "claude", "pre"}, hook.Pre, hook.Claude, ""},
		{"no kind", nil, "", "", "no hook kind"},
		{"event name", []string{"PreToolUse"}, "", "", "unknown hook"},
		{"upper case", []string{"PRE"}, "", "", "unknown hook"},
		{"extra", []string{"pre", "x"}, hook.Pre, "", "unexpected arguments"},
		{"unknown flag", []string{"pre", "-x"}, hook.Pre, "", "not defined"},
		{"bad agent", []string{"pre", "-agent", "vim"}, hook.Pre, "", "unknown agent"},
		{"bad deadline", []string{"pre", "-deadline", "-1s"}, hook.Pre, "", "positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := hook.ParseInvocation(tt.args)
			if inv.Kind != tt.kind || inv.Agent != tt.agent {
				t.Errorf("ParseInvocation(%q) = kind %q agent %q, want %q %q", tt.args, inv.Kind, inv.Agent, tt.kind, tt.agent)
			}
			if tt.err == "" && inv.Err != nil || tt.err != "" && (inv.Err == nil || !strings.Contains(inv.Err.Error(), tt.err)) {
				t.Errorf("ParseInvocation(%q).Err = %v, want %q", tt.args, inv.Err, tt.err)
			}
		})
	}
}
