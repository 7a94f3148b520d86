package hook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// This file is the project side of the agents' hook files: which agents a
// project uses (DetectAgents, ParseAgents, ConfiguredAgents), installing
// docket's hooks into a project (InstallProject), and proving that an
// installed pre hook blocks (Probe), as `docket init` and `docket doctor`
// need them.

// Agents are the agents Docket installs hooks for, in the order it
// reports them.
var Agents = []Agent{Claude, Gemini, Codex}

// DetectAgents returns the agents in use in project: those whose project
// directory (.claude, .gemini, .codex) or binary (on PATH) is present, and
// Claude Code when there is none.
func DetectAgents(project string) []Agent {
	var agents []Agent
	for _, a := range Agents {
		if fi, err := os.Stat(filepath.Join(project, "."+string(a))); err == nil && fi.IsDir() {
			agents = append(agents, a)
		} else if _, err := exec.LookPath(string(a)); err == nil {
			agents = append(agents, a)
		}
	}
	if len(agents) == 0 {
		agents = []Agent{Claude}
	}
	return agents
}

// ParseAgents parses a comma-separated list of agent names (claude,
// gemini, codex) or "all".
func ParseAgents(names string) ([]Agent, error) {
	var agents []Agent
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n == "all" {
			return slices.Clone(Agents), nil
		}
		a, err := ParseAgent(n)
		if err != nil || n == "" {
			return nil, fmt.Errorf("unknown agent %q (want claude, gemini, codex or all)", n)
		}
		if !slices.Contains(agents, a) {
			agents = append(agents, a)
		}
	}
	return agents, nil
}

// ConfiguredAgents returns the agents whose hook file exists in project;
// Claude Code when none does, so that a project without hooks is checked
// (and fails with the fix).
func ConfiguredAgents(project string) []Agent {
	var agents []Agent
	for _, a := range Agents {
		name, _, _ := a.Installs()
		if _, err := os.Stat(filepath.Join(project, name)); err == nil {
			agents = append(agents, a)
		}
	}
	if len(agents) == 0 {
		agents = []Agent{Claude}
	}
	return agents
}

// InstallProject merges docket's hooks (running command) into the agent's
// hook file in project. Existing settings and hooks are kept; an event that
// already runs `docket hook <kind>` is left alone. It returns the file's
// path and the events it added (none: the file was not written).
func InstallProject(project string, agent Agent, command string) (path string, added []string, err error) {
	name, _, err := agent.Installs()
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(project, name)
	settings, err := ReadSettings(path)
	if err != nil {
		return path, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return path, nil, err
	}
	if added, err = settings.Install(agent, command); err != nil || len(added) == 0 {
		return path, nil, err
	}
	return path, added, settings.Write()
}

// A Check is one result of checking an agent's setup in a project.
type Check struct {
	// Name says what was checked ("claude PreToolUse hook sh -c …").
	Name string
	// Err is why the check failed, nil when it passed; an
	// *UntrustedError carries the one-line fix.
	Err error
	// Warning: Err is a warning (a hook that records, not one that
	// blocks, is missing), not a failure.
	Warning bool
	// Detail, when the check passed, says what it found.
	Detail string
}

// CheckAgent checks an agent's setup in project as `docket doctor` does:
// its hook file parses; every event docket installs has its docket hook
// (a missing post or session hook is a warning); a docket pre hook covers
// the agent's shell tool; the agent will run project hooks at all
// (CheckTrust); and every installed pre hook blocks (Probe), its denial
// recorded in session (NewProbeSession; EndProbeSession closes it).
func CheckAgent(ctx context.Context, project string, agent Agent, session string) []Check {
	name, events, err := agent.Installs()
	if err != nil {
		return []Check{{Name: string(agent) + " settings", Err: err}}
	}
	path := filepath.Join(project, name)
	settings, err := ReadSettings(path)
	if err != nil {
		return []Check{{Name: string(agent) + " settings", Err: err}}
	}
	var checks []Check
	for _, h := range events[1:] {
		if len(settings.Installed(h.Event, "", h.Kind)) == 0 {
			checks = append(checks, Check{Name: fmt.Sprintf("%s %s", agent, h.Event), Warning: true,
				Err: fmt.Errorf("no docket hook %s installed in %s; executions or sessions go unrecorded", h.Kind, name)})
		}
	}
	pre := settings.Installed(agent.PreEvent(), agent.ShellTool(), Pre)
	if len(pre) == 0 {
		return append(checks, Check{Name: fmt.Sprintf("%s %s hook", agent, agent.PreEvent()), Err: &UntrustedError{Agent: agent,
			Reason: fmt.Sprintf("no docket hook pre for %s in %s: the gate is not installed", agent.ShellTool(), name),
			Fix:    "docket init -agent " + string(agent)}})
	}
	if agent != Claude {
		checks = append(checks, Check{Name: fmt.Sprintf("%s runs project hooks", agent), Err: CheckTrust(agent, project, os.Getenv)})
	}
	for _, h := range pre {
		if prog := HookProgram(h.Command); filepath.IsAbs(prog) {
			checks = append(checks, Check{Name: fmt.Sprintf("%s hook command", agent), Warning: true,
				Err: fmt.Errorf("%s runs %s by its absolute path: once %s is committed, a teammate whose docket is elsewhere gets a hook that cannot start, which the agent reads as \"run the call\"; put docket on PATH and run docket init -agent %s -command docket", name, prog, name, agent)})
		}
		checks = append(checks, Check{Name: fmt.Sprintf("%s %s hook %s", agent, agent.PreEvent(), h.Command),
			Err: Probe(ctx, project, agent, h, session), Detail: ": blocks a denied call (exit 2)"})
	}
	return checks
}

// ProbeSession begins the session id of every docket doctor run: the
// probes' synthetic denials are recorded in a session of their own per run
// (NewProbeSession), which EndProbeSession ends, so that an audit finds
// it closed like any other.
const ProbeSession = "docket-doctor"

// NewProbeSession returns the session of one doctor run's probes:
// ProbeSession, the time and a random suffix.
func NewProbeSession() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return ProbeSession + "-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// EndProbeSession signs the session_end of a doctor run's probe session,
// when its probes recorded anything (a hook that blocked without
// recording, or a probe that never ran, leaves no session to end).
func EndProbeSession(ctx context.Context, project, session string) error {
	s := store.Open(project)
	recs, err := s.Receipts(session)
	if err != nil || len(recs) == 0 {
		return err
	}
	g, err := gate.Open(ctx, project, gate.Options{Caller: "docket doctor"})
	if err != nil {
		return err
	}
	_, err = g.Record(ctx, gate.Event{HookEvent: receipts.SessionEnd, SessionID: session, Agent: ProbeSession})
	return err
}

// Probe runs an installed pre hook command as the agent does (sh -c, the
// agent's JSON event on stdin, its project directory variables, the hook's
// timeout in the agent's unit) with a shell call the gate must deny (rm
// -rf /), and returns nil only when it blocked: exit 2 with a reason on
// stderr. The error says how the agent would let the call run.
func Probe(ctx context.Context, project string, agent Agent, h InstalledHook, session string) error {
	event := map[string]any{
		"session_id":      session,
		"transcript_path": filepath.Join(project, ".docket", "doctor.jsonl"),
		"cwd":             project,
		"hook_event_name": agent.PreEvent(),
		"tool_name":       agent.ShellTool(),
		"tool_input":      map[string]any{"command": "rm -rf /", "description": "docket doctor: synthetic call the gate must deny"},
	}
	env := append(os.Environ(), "CLAUDE_PROJECT_DIR="+project)
	switch agent {
	case Claude:
		event["tool_use_id"] = fmt.Sprintf("docket-doctor-%d", time.Now().UnixNano())
	case Gemini:
		event["timestamp"] = time.Now().UTC().Format(time.RFC3339)
		env = append(env, "GEMINI_PROJECT_DIR="+project)
	case Codex:
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
	return ErrProbeAllowed
}

// ErrProbeAllowed is Probe's finding for a hook that let the denied call
// run (exit 0).
var ErrProbeAllowed = errors.New("exit 0: the call was allowed; the policy does not deny rm -rf /")

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no output"
	}
	return s
}
