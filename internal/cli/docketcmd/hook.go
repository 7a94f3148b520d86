package docketcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/internal/hookd"
	"github.com/docketlog/docket/store"
)

// processStart is when the process started, as near as Go lets us see it;
// hook_latency_ms is measured from it.
var processStart = time.Now()

const hookUsage = `Usage:
    docket hook pre|post|post-failure|session-start|session-end [options] < event.json

Runs as an agent hook: reads the agent's hook event (JSON) on stdin.

    pre            decide the tool call with the Cedar policy and sign the
                   decision into the session chain
    post           sign the execution of an allowed call (PostToolUse)
    post-failure   sign the execution of a call that failed (PostToolUseFailure)
    session-start  sign the start of a session
    session-end    sign the end of a session

The project is $CLAUDE_PROJECT_DIR, else the current directory; its state
is in .docket/ (see docket init).

Options (before or after the hook):
    -agent NAME      the agent's hook protocol: claude, gemini, codex
                     (default: what the event's hook_event_name says,
                     else claude)
    -deadline D      bound reading the event, and the whole pre hook: give
                     up and block after D (default 10s)

Exit codes:
    0  pre: the call may run (or the user is asked). post and session
       hooks: always; an event that could not be receipted is kept in
       .docket/spool (or ~/.local/state/docket/spool) and a later hook
       receipts it, and the warning is on stderr and, as a JSON
       systemMessage, on stdout
    2  pre: the call is denied, or the gate failed (fail closed). Also any
       hook whose command line cannot be read (no or an unknown hook kind,
       extra arguments, a bad flag, -h) unless the event names itself a
       post or session event (then it is receipted as that, with a
       warning), and any hook whose event's hook_event_name contradicts
       the command line where either is a pre-tool event
    docket hook never exits 1: agents read exit 1 from a pre hook as "run
    the call"

Environment:
    DOCKET_HOOK_LOG  append one JSON log line per run to this file
    DOCKET_AUTOSYNC  0: do not start docket sync in the background (for CI
                     jobs that run docket sync themselves at the end)
    DOCKET_HOOKD     0: neither forward pre and post hooks to the gate
                     daemon nor start one (see docket hookd)

Examples:
    echo '{"session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}' | docket hook pre
    docket hook pre -agent gemini < before-tool.json
`

func runHook(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if hookd.StdinRead {
		// A post hook the gate daemon did not answer: the event, or its
		// start, was read before the daemon was asked.
		stdin = io.MultiReader(bytes.NewReader(hookd.Stdin), stdin)
	}
	code := runHookFrom(ctx, processStart, nil, args, stdin, stdout, stderr)
	if hookd.Fast && hook.ParseInvocation(args).Kind == hook.Pre {
		startHookd() // the next pre hooks are forwarded to it
	}
	return code
}

// runHookFrom runs the hook of a process that started at start, in this
// process or, held set, for a hook process that forwarded it to the gate
// daemon, whose store held is (its log line says so).
func runHookFrom(ctx context.Context, start time.Time, held *store.Store, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv := hook.ParseInvocation(args)
	if inv.Help || len(args) == 0 && isTerminal(stdin) {
		// Never 0: an agent must not read a help request as an allow.
		fmt.Fprint(stdout, hookUsage)
		errorf(stderr, "hook: printed the usage and handled no event: a call, if this runs as a hook, is blocked")
		return hook.ExitBlock
	}
	opts := hook.Options{
		Agent:     inv.Agent,
		Kind:      inv.Kind,
		ArgsErr:   inv.Err,
		Start:     start,
		Deadline:  inv.Deadline,
		StartSync: func(s *store.Store) { startSync(s, stderr) },
	}
	opts.Home, _ = os.UserHomeDir()
	if held != nil {
		opts.Store = held
	} else if project, err := store.ProjectDir(); err != nil {
		opts.Err = err
	} else {
		opts.Store = store.Open(project)
	}
	if path := os.Getenv("DOCKET_HOOK_LOG"); path != "" {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			defer f.Close()
			opts.Logger = slog.New(slog.NewJSONHandler(f, nil))
			if held != nil {
				opts.Logger = opts.Logger.With("via", "hookd")
			}
		}
	}
	if f, ok := ctx.Value(faultKey{}).(Fault); ok && f != nil {
		opts.Fault = f(stderr)
	}
	return hook.Run(ctx, opts, stdin, stdout, stderr)
}

// isTerminal reports whether r is a terminal: docket hook run by hand with
// no arguments prints its usage instead of waiting for an event.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// isTerminalOut reports whether w is a terminal.
func isTerminalOut(w io.Writer) bool {
	r, ok := w.(io.Reader)
	return ok && isTerminal(r)
}

// A Fault makes the pre hook fail, for the fail-closed tests: given the
// hook's stderr, it returns the hook.Options.Fault to call. SIGINT and
// SIGTERM are taken before any command runs (Run). Only the docket of the
// test binaries (internal/cli/clitest) injects one, through WithFault; a
// fault can only block a call, never allow one.
type Fault func(stderr io.Writer) func(point string)

type faultKey struct{}

// WithFault returns a context under which docket hook pre injects f.
func WithFault(ctx context.Context, f Fault) context.Context {
	return context.WithValue(ctx, faultKey{}, f)
}

// startSync starts `docket sync` for the store, detached in its own session
// with no terminal, and does not wait for it. When a sync is already running
// (it holds the store's sync lock) none is started: the running one rescans
// the chains before it exits.
func startSync(s *store.Store, stderr io.Writer) {
	if os.Getenv("DOCKET_AUTOSYNC") == "0" || s.Syncing() {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe, "sync", "-background", "-dir", s.Project())
	cmd.Dir = s.Project()
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+s.Project())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		warnf(stderr, "starting docket sync: %v", err)
		return
	}
	cmd.Process.Release()
}
