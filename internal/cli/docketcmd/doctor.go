package docketcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

Checks the project's Docket setup the way each agent will use it: the
issuer key, the policy, the log configuration, and — what matters — for
every agent configured in the project (.claude/settings.json,
.gemini/settings.json, .codex/hooks.json):

  - the hook configuration parses and installs the docket pre hook for
    the agent's shell tool;
  - the agent will run the project's hooks at all: Gemini CLI only in a
    trusted folder (~/.gemini/trustedFolders.json), Codex only in a trusted
    project whose hooks are trusted too (~/.codex/config.toml); otherwise
    they run none, silently;
  - every docket pre hook command found there blocks: it is run through sh,
    exactly as the agent runs it, with the agent's own event for a shell
    call the gate must deny (rm -rf /), and must exit 2 with a reason.

Each MCP server in .mcp.json that runs through docket mcp is started as
configured and sent a call the gate must refuse; one that does not run
through docket mcp is reported as ungated.

Every failing check is printed with the fix in one line. The synthetic
denials are recorded in the session "docket-doctor".

Exit codes:
    0  the gate blocks for every configured agent
    2  a check failed: the gate does not block, or the hooks would not run
`

// doctorSession is the session the synthetic denials are recorded in.
const doctorSession = "docket-doctor"

func runDoctor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket doctor", doctorUsage, stderr)
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
			if ue := (*hook.UntrustedError)(nil); errors.As(err, &ue) {
				fmt.Fprintf(stdout, "      fix: %s\n", ue.Fix)
			}
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

	// The agents configured in the project; Claude Code when none is, so
	// that a project without hooks fails with the fix.
	var agents []hook.Agent
	for _, agent := range []hook.Agent{hook.Claude, hook.Gemini, hook.Codex} {
		name, _, _ := agent.Installs()
		if _, err := os.Stat(filepath.Join(project, name)); err == nil {
			agents = append(agents, agent)
		}
	}
	if len(agents) == 0 {
		agents = []hook.Agent{hook.Claude}
	}
	for _, c := range hook.CheckConfine(s, agents, os.Getenv) {
		check(c.Name, c.Err, c.Detail)
	}
	for _, agent := range agents {
		name, events, _ := agent.Installs()
		path := filepath.Join(project, name)
		settings, err := hook.ReadSettings(path)
		if err != nil {
			check(string(agent)+" settings", err, "")
			continue
		}
		for _, h := range events[1:] {
			if len(settings.Installed(h.Event, "", h.Kind)) == 0 {
				fmt.Fprintf(stdout, "warn  %s %s: no docket hook %s installed in %s; executions or sessions go unrecorded\n", agent, h.Event, h.Kind, rel(project, path))
			}
		}
		pre := settings.Installed(agent.PreEvent(), agent.ShellTool(), hook.Pre)
		if len(pre) == 0 {
			check(fmt.Sprintf("%s %s hook", agent, agent.PreEvent()), &hook.UntrustedError{Agent: agent,
				Reason: fmt.Sprintf("no docket hook pre for %s in %s: the gate is not installed", agent.ShellTool(), rel(project, path)),
				Fix:    "docket init -agent " + string(agent)}, "")
			continue
		}
		if agent != hook.Claude {
			check(fmt.Sprintf("%s runs project hooks", agent), hook.CheckTrust(agent, project, os.Getenv), "")
		}
		for _, h := range pre {
			check(fmt.Sprintf("%s %s hook %s", agent, agent.PreEvent(), h.Command), probeHook(project, agent, h), ": blocks a denied call (exit 2)")
		}
	}
	ok = doctorMCP(ctx, project, stdout) && ok
	if !ok {
		return 2
	}
	if cgoBuild() {
		// Every tool call starts the hook: see README "Performance".
		fmt.Fprintln(stdout, "note  this docket is linked with libc (CGO_ENABLED=1); a static build starts each hook about 1.3 ms sooner")
		hintf(stderr, "CGO_ENABLED=0 go install github.com/docketlog/docket/cmd/docket@latest")
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = string(a)
	}
	fmt.Fprintf(stdout, "the gate blocks (%s)\n", strings.Join(names, ", "))
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

// probeHook runs an installed pre hook command as the agent does (sh -c,
// the agent's JSON event on stdin, its project directory variables, the
// hook's timeout in the agent's unit) with a shell call the gate must deny,
// and reports whether it blocked.
func probeHook(project string, agent hook.Agent, h hook.InstalledHook) error {
	event := map[string]any{
		"session_id":      doctorSession,
		"transcript_path": filepath.Join(project, ".docket", "doctor.jsonl"),
		"cwd":             project,
		"hook_event_name": agent.PreEvent(),
		"tool_name":       agent.ShellTool(),
		"tool_input":      map[string]any{"command": "rm -rf /", "description": "docket doctor: synthetic call the gate must deny"},
	}
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
	switch agent {
	case hook.Claude:
		event["tool_use_id"] = fmt.Sprintf("docket-doctor-%d", time.Now().UnixNano())
	case hook.Gemini:
		event["timestamp"] = time.Now().UTC().Format(time.RFC3339)
		env = append(env, "GEMINI_PROJECT_DIR="+project)
	case hook.Codex:
		event["tool_use_id"] = fmt.Sprintf("docket-doctor-%d", time.Now().UnixNano())
		event["turn_id"] = "docket-doctor"
		event["model"] = "docket-doctor"
		event["permission_mode"] = "default"
	}
	data, _ := json.Marshal(event)
	timeout := 60 * time.Second // the agents' default hook timeout
	if h.Timeout > 0 {
		timeout = time.Duration(h.Timeout) * agent.TimeoutUnit()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir = project
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	reason := strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("timed out after %v: %s lets the call run", timeout, agent)
	case errors.As(err, &ee) && ee.ExitCode() == 2 && reason != "":
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		return errors.New("exit 2 without a reason on stderr")
	case errors.As(err, &ee):
		return fmt.Errorf("exit %d (%s): %s lets the call run", ee.ExitCode(), firstLine(reason), agent)
	case err != nil:
		return fmt.Errorf("%v: %s lets the call run", err, agent)
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
