package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const doctorUsage = `Usage:
    docket doctor [-json]

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

With a log configured, it checks the path receipts take to it:

  - the witness policy parses and lists the configured log key;
  - the log answers, and its checkpoint is signed by the configured log
    key and cosigned by the policy's witness quorum;
  - the receipts still pending (how many, how old the oldest is), and
    the outcome of the last docket sync, background ones included.

Each MCP server in .mcp.json that runs through docket mcp is started as
configured and sent a call the gate must refuse; one that does not run
through docket mcp is reported as ungated.

Every failing check is printed with the fix in one line. With -json, each
line is a JSON object instead: {"status":"ok"|"warn"|"FAIL"|"note"|"result",
"check":NAME,"detail":TEXT,"fix":TEXT}, the verdict last. The synthetic
denials are recorded in a session of their own per run,
docket-doctor-TIME-RANDOM, which doctor then ends (session_end) so that
an audit finds it closed; an MCP server's probe in
docket-doctor-TIME-RANDOM-mcp-NAME, which its relay ends.

Exit codes:
    0  the gate blocks for every configured agent
    2  a check failed: the gate does not block, the hooks would not run,
       or receipts cannot reach the log
`

func runDoctor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket doctor", doctorUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	project, found := findProject(stderr, "doctor")
	if !found {
		return 2
	}
	s := store.Open(project)
	r := doctorReport{w: stdout, json: *asJSON}
	ok, observing := true, false
	check := func(name string, err error, detail string) {
		if err != nil {
			ok = false
			var fix string
			if ue := (*hook.UntrustedError)(nil); errors.As(err, &ue) {
				fix = ue.Fix
			}
			r.fail(name, err.Error(), fix)
			return
		}
		r.ok(name, strings.TrimPrefix(detail, ": "))
	}

	priv, err := s.Key()
	check("issuer key", err, func() string {
		if priv == nil {
			return ""
		}
		return ": " + receipts.NewKeyFile(priv).KID
	}())
	eng, err := gate.LoadPolicy(s)
	check("policy", err, func() string {
		if eng == nil {
			return ""
		}
		return ": " + eng.Digest()
	}())
	cfg, err := s.Config()
	check("config", err, func() string {
		if cfg.HasLog() {
			return ": log " + cfg.LogURL
		}
		return ": no log configured (receipts stay local)"
	}())

	if err == nil && cfg.HasLog() {
		ok = doctorLog(ctx, s, cfg, r) && ok
		ok = doctorLastSync(s, r) && ok
	}
	ok = doctorPending(s, r) && ok

	agents := hook.ConfiguredAgents(project)
	probe := hook.NewProbeSession()
	defer func() {
		if err := hook.EndProbeSession(context.WithoutCancel(ctx), project, probe); err != nil {
			warnf(stderr, "ending the probe session %s: %v", probe, err)
		}
	}()
	for _, c := range hook.CheckConfine(s, agents, os.Getenv) {
		check(c.Name, c.Err, c.Detail)
	}
	for _, agent := range agents {
		for _, c := range hook.CheckAgent(ctx, project, agent, probe) {
			if c.Warning {
				r.warn(c.Name, c.Err.Error(), "")
				continue
			}
			if errors.Is(c.Err, hook.ErrProbeAllowed) && observedDeny(project, probe) {
				observing = true
				r.warn(c.Name, errObserved.Error(), "")
				continue
			}
			check(c.Name, c.Err, c.Detail)
		}
	}
	servers, err := mcp.ProbeServers(ctx, project, probe)
	if err != nil {
		ok = false
		r.fail("MCP config", err.Error(), "")
	}
	for _, sc := range servers {
		switch {
		case !sc.Gated:
			r.warn("MCP server "+sc.Name, "in .mcp.json but does not run through docket mcp: its calls are not gated", "docket init -mcp "+sc.Name)
		case sc.Err != nil:
			ok = false
			r.fail("MCP server "+sc.Name, sc.Err.Error(), "")
		default:
			r.ok("MCP server "+sc.Name, "docket mcp denies a refused call before the server sees it")
		}
	}
	if !ok {
		return 2
	}
	if observing {
		r.line(doctorLine{Status: "result", Detail: "the gate decides and signs every call but blocks none: observe mode (docket init -observe=false to enforce)"})
		return 0
	}
	if cgoBuild() {
		// Every tool call starts the hook: see README "Performance".
		r.line(doctorLine{Status: "note", Detail: "this docket is linked with libc (CGO_ENABLED=1); a static build starts each hook about 1.3 ms sooner"})
		hintf(stderr, "CGO_ENABLED=0 go install github.com/docketlog/docket/cmd/docket@latest")
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = string(a)
	}
	r.line(doctorLine{Status: "result", Detail: fmt.Sprintf("the gate blocks (%s)", strings.Join(names, ", "))})
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
