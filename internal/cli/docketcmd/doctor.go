package docketcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const doctorUsage = `Usage:
    docket doctor

Checks the project's Docket setup the way Claude Code will use it: the
issuer key, the policy, the log configuration, and — what matters — that the
PreToolUse hook installed in .claude/settings.json really blocks. It runs
every docket pre hook command found there through sh, exactly as Claude Code
does, with a synthetic Bash call that the gate must deny (rm -rf /), and
checks that it exits 2 with a reason. The synthetic denial is recorded in
the session "docket-doctor".

Exit codes:
    0  the gate blocks
    2  the gate does not block, or the setup is broken
`

// doctorSession is the session the synthetic denials are recorded in.
const doctorSession = "docket-doctor"

func runDoctor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docket doctor", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsage) }
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	s := store.Open(project)
	ok := true
	check := func(name string, err error, detail string) {
		if err != nil {
			ok = false
			fmt.Fprintf(stdout, "FAIL  %s: %v\n", name, err)
			return
		}
		fmt.Fprintf(stdout, "ok    %s%s\n", name, detail)
	}

	priv, err := receipts.LoadPrivateKey(s.KeyPath())
	check("issuer key", err, func() string {
		if priv == nil {
			return ""
		}
		return ": " + receipts.NewKeyFile(priv).KID
	}())
	eng, err := policy.LoadDir(s.PolicyDir())
	check("policy", err, func() string {
		if eng == nil {
			return ""
		}
		return ": " + eng.Digest()
	}())
	cfg, err := s.LoadConfig()
	check("config", err, func() string {
		if cfg.HasLog() {
			return ": log " + cfg.LogURL
		}
		return ": no log configured (receipts stay local)"
	}())

	name, events, _ := hook.Claude.Installs()
	path := filepath.Join(project, name)
	settings, err := hook.ReadSettings(path)
	if err != nil {
		check("settings", err, "")
		return 2
	}
	for _, h := range events[1:] {
		if len(settings.Installed(h.Event, "", h.Kind)) == 0 {
			fmt.Fprintf(stdout, "warn  %s: no docket hook %s installed; executions or sessions go unrecorded\n", h.Event, h.Kind)
		}
	}
	pre := settings.Installed(receipts.PreToolUse, "Bash", hook.Pre)
	if len(pre) == 0 {
		check("PreToolUse hook", fmt.Errorf("no docket hook pre for Bash in %s: the gate is not installed", rel(project, path)), "")
		hintf(stderr, "run docket init")
		return 2
	}
	for _, h := range pre {
		check("PreToolUse hook "+h.Command, probeHook(project, h), ": blocks a denied call (exit 2)")
	}
	if !ok {
		return 2
	}
	if cgoBuild() {
		// Every tool call starts the hook: see README "Performance".
		fmt.Fprintln(stdout, "note  this docket is linked with libc (CGO_ENABLED=1); a static build starts each hook about 1.3 ms sooner")
		hintf(stderr, "CGO_ENABLED=0 go install github.com/docketlog/docket/cmd/docket@latest")
	}
	fmt.Fprintln(stdout, "the gate blocks")
	return 0
}

// cgoBuild reports whether this binary was built with cgo, which makes it
// load libc at every start (net uses cgo for name resolution).
func cgoBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			return s.Value == "1"
		}
	}
	return false
}

// probeHook runs an installed pre hook command as Claude Code does (sh -c,
// JSON event on stdin, CLAUDE_PROJECT_DIR set, the hook's timeout) with a
// call the gate must deny, and reports whether it blocked.
func probeHook(project string, h hook.InstalledHook) error {
	event, _ := json.Marshal(map[string]any{
		"session_id":      doctorSession,
		"transcript_path": filepath.Join(project, ".docket", "doctor.jsonl"),
		"cwd":             project,
		"hook_event_name": receipts.PreToolUse,
		"tool_name":       "Bash",
		"tool_input":      map[string]any{"command": "rm -rf /", "description": "docket doctor: synthetic call the gate must deny"},
		"tool_use_id":     fmt.Sprintf("docket-doctor-%d", time.Now().UnixNano()),
	})
	timeout := 60 * time.Second // Claude Code's default hook timeout
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout) * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
	cmd.Stdin = bytes.NewReader(event)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	reason := strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("timed out after %v: Claude Code lets the call run", timeout)
	case errors.As(err, &ee) && ee.ExitCode() == 2 && reason != "":
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		return errors.New("exit 2 without a reason on stderr")
	case errors.As(err, &ee):
		return fmt.Errorf("exit %d (%s): Claude Code lets the call run", ee.ExitCode(), firstLine(reason))
	case err != nil:
		return fmt.Errorf("%v: Claude Code lets the call run", err)
	}
	return errors.New("exit 0: the call was allowed; the policy does not deny rm -rf /")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}
