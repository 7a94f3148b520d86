package docketcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/store"
)

const policyUsage = `Usage:
    docket policy check [-json] [-dir DIR | FILE.cedar ...]
    docket policy eval [-dir DIR] [-agent NAME] < event.json
    docket policy suggest [-all] > .docket/policy/suggested.cedar
    docket policy confinement [-json]

check loads and validates a policy against the agent schema and prints its
acta-policy-digest-v1 digest, its files and its policy IDs (-json: one
object with policy_digest, files, policies, permits, forbids, ask and
undeclared_actions).

eval decides one hook event (PreToolUse JSON, as the agent sends it) and
prints, as JSON, the decision, the reason, the policy IDs behind it and
every Cedar request built for the call with its own result. Nothing is
signed or recorded.

suggest reads the project's receipts that observe mode (docket init
-observe) did not enforce, with their inputs from the local journal (docket
init -journal), and drafts, for a person to review, the narrowest permits
that would have let those calls through; what it will not suggest (what a
forbid or the default policy's forbids hold, programs that run anything,
calls without a journaled input) it says as comments. The draft loads
beside the project's policy: review it, save it under .docket/policy/, and
run docket policy check.

confinement prints the confinement derived from the policy's file rules
(what a command run by docket exec may read and write), its digest and the
kernel mechanism that applies it here; -json prints its canonical form.

The policy is the project's .docket/policy unless -dir or files are given.

Options:
    -dir DIR      directory of *.cedar files
    -agent NAME   eval: the event's hook protocol: claude (default), gemini, codex
    -all          suggest: also the denials and asks that were enforced

Exit codes:
    0  the policy loads (check); the event was evaluated (eval); a draft was
       printed (suggest, also an empty one)
    2  the policy does not load, or the event is unusable

Files that are code. Writing one adds a request with its own action on the
file (both actions are in FileWrite; docs/hook.md says why they differ):
  WriteBuildFile    build, test and package manifests the agent's tools run:
                    Makefile, *.mk, package.json, build.rs, conftest.py,
                    setup.py, pyproject.toml, Cargo.toml, CMakeLists.txt,
                    justfile, .pre-commit-config.yaml, go.mod, *.config.js,
                    node_modules/.bin/*, .github/workflows/*, Go files with
                    //go:generate. The default policy allows them.
  WriteAutorunFile  files that run later outside the agent: .git/hooks/*, the
                    configured core.hooksPath (.husky/, .githooks/),
                    .vscode/tasks.json and settings.json, .envrc,
                    .devcontainer/, *.pth, other agents' configuration
                    (.gemini/, .codex/, .cursor/, .mcp.json: denied), shell
                    startup files. The default policy asks.
Commands the file's format says will run (recipes, scripts, hook bodies,
entry: lines, //go:generate) are decided like a Bash call; a write planting
a command the policy forbids is denied.
`

func runPolicy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "suggest" {
		return runPolicySuggest(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "confinement" {
		fs := newFlagSet("docket policy confinement", policyUsage, stderr)
		asJSON := fs.Bool("json", false, "")
		if err := fs.Parse(args[1:]); err != nil {
			return flagExit(err)
		}
		return printConfinement(ctx, "", *asJSON, stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "check" && args[0] != "eval") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, policyUsage)
			return 0
		}
		if len(args) == 0 {
			fmt.Fprint(stderr, policyUsage)
			return 2
		}
		errorf(stderr, "policy: unknown subcommand %q", args[0])
		if s := closest(args[0], []string{"check", "eval", "suggest"}); s != "" {
			hintf(stderr, "did you mean docket policy %s?", s)
		} else {
			hintf(stderr, "docket policy -h lists check, eval and suggest")
		}
		return 2
	}
	sub := args[0]
	fs := newFlagSet("docket policy "+sub, policyUsage, stderr)
	dir := fs.String("dir", "", "")
	agentName := fs.String("agent", "claude", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args[1:]); err != nil {
		return flagExit(err)
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	var eng *policy.Engine
	switch {
	case sub == "check" && fs.NArg() > 0:
		eng, err = policy.LoadFiles(fs.Args()...)
	case fs.NArg() > 0:
		errorf(stderr, "policy eval: unexpected arguments %q (the event is read on stdin)", fs.Args())
		return 2
	case *dir != "":
		eng, err = policy.LoadDir(*dir)
	default:
		eng, err = policy.LoadDir(store.Open(project).PolicyDir())
	}
	if err != nil {
		errorf(stderr, "policy: %v", err)
		hintf(stderr, "every call is denied while the policy does not load")
		return 2
	}
	if sub == "check" {
		sum := eng.Check()
		for _, a := range sum.UndeclaredActions {
			warnf(stderr, "action %q is not in the agent schema; it is treated as a tool name (a typo?)", a)
		}
		if *asJSON {
			b, _ := json.Marshal(sum)
			fmt.Fprintf(stdout, "%s\n", b)
			return 0
		}
		fmt.Fprintf(stdout, "policy_digest %s\n", sum.Digest)
		for _, f := range sum.Files {
			fmt.Fprintf(stdout, "file %s\n", f)
		}
		fmt.Fprintf(stdout, "policies %d (%d permit, %d forbid)\n", len(sum.Policies), sum.Permits, sum.Forbids)
		for _, id := range sum.Policies {
			fmt.Fprintf(stdout, "id %s\n", id)
		}
		for _, id := range sum.Ask {
			fmt.Fprintf(stdout, "ask %s\n", id)
		}
		return 0
	}

	agent, err := hook.ParseAgent(*agentName)
	if err != nil {
		errorf(stderr, "policy eval: %v", err)
		return 2
	}
	data, err := io.ReadAll(io.LimitReader(stdin, hook.MaxInput+1))
	if err != nil {
		errorf(stderr, "policy eval: reading stdin: %v", err)
		return 2
	}
	ev, err := hook.ParseEvent(agent, hook.Pre, data, project)
	if err != nil {
		errorf(stderr, "policy eval: %v", err)
		return 2
	}
	home, _ := os.UserHomeDir()
	type callResult struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
		policy.Decision
	}
	out := struct {
		Decision     string       `json:"decision"`
		Reason       string       `json:"reason"`
		Message      string       `json:"message"`
		PolicyIDs    []string     `json:"policy_ids"`
		PolicyDigest string       `json:"policy_digest"`
		Calls        []callResult `json:"calls"`
	}{PolicyDigest: eng.Digest()}
	d := gate.Evaluate(ctx, eng, ev.Calls, project, home)
	out.Decision, out.Reason, out.Message, out.PolicyIDs = d.Decision, d.Reason, d.Message, d.PolicyIDs
	for _, c := range ev.Calls {
		c.ProjectDir, c.Home = project, home
		out.Calls = append(out.Calls, callResult{ToolName: c.ToolName, ToolInput: c.ToolInput, Decision: eng.Decide(ctx, c)})
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		errorf(stderr, "policy eval: %v", err)
		return 2
	}
	return 0
}
