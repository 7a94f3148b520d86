// Package docketcmd is the docket command, the user CLI of Docket: it gates agent tool calls with a
// Cedar policy, signs receipts into per-session chains, submits them to a
// transparency log and verifies them offline.
package docketcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/docketlog/docket/store"
)

const usage = `Usage:
    docket <command> [options] [arguments]

Commands:
    demo        show what Docket does, on embedded defaults
    version     print the module version and VCS revision
    keygen      make an issuer, log or witness key
    verify      verify receipts and receipt chains offline
    init        set up Docket hooks, key and policy in a project
    hook        run as an agent hook (pre, post, post-failure, session-start, session-end)
    doctor      check that the installed hook really blocks and receipts reach the log
    status      the project at a glance: sessions, receipts, pending, last sync
    sessions    list the project's sessions
    show        a session's timeline: each call, its decision and reason, its outcome
    disclose    prove to a third party the input of one logged call
    repair      move a session chain's damaged tail aside, signed as such
    policy      check a policy, evaluate a hook event, suggest permits from observe
                mode, print the confinement
    sync        submit pending receipts to the log and store their proofs
    audit       read the log back: what was dropped, withheld, forked or equivocated
    monitor     follow the log and alert on forks, split views and bad entries
    explore     serve a read-only web page over the log
    export      write a bundle of chains, proofs and keys for an auditor
    verify-evidence  check an evidence file with the log's key alone
    verify-index     check an issuer's verifiable index
    mcp         run a stdio MCP server behind the gate
    pic         verify a PIC action proposal
    reconcile   match an agent's own record of its sessions with the receipts
    exec        run a command under the policy's confinement (Landlock, Seatbelt)
    run         run an agent with its whole process tree confined

Run "docket <command> -h" for a command's options.

Exit codes:
    0  success (verify: every receipt valid)
    1  verify: some receipt invalid
    2  hook pre: the call is denied; verify: undecidable; other commands: error
`

// A command runs with its arguments and streams and returns the process
// exit code.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// commands maps each subcommand to its implementation.
var commands = map[string]command{
	"demo":            runDemo,
	"keygen":          runKeygen,
	"verify":          runVerify,
	"init":            runInit,
	"hook":            runHook,
	"doctor":          runDoctor,
	"version":         runVersion,
	"status":          runStatus,
	"sessions":        runSessions,
	"show":            runShow,
	"disclose":        runDisclose,
	"repair":          runRepair,
	"policy":          runPolicy,
	"sync":            runSync,
	"audit":           runAudit,
	"monitor":         runMonitor,
	"explore":         runExplore,
	"export":          runExport,
	"verify-evidence": runVerifyEvidence,
	"verify-index":    runVerifyIndex,
	"mcp":             runMCP,
	"pic":             runPIC,
	"reconcile":       runReconcile,
	"exec":            runExec,
	"run":             runRun,
	// The demo's MCP server (docket demo), not listed in the usage.
	"demo-mcp-server": runDemoMCPServer,
	// The project's gate daemon, started by the pre hook (docket hookd -h).
	"hookd": runHookd,
}

// Run runs the docket command line args (without the program name) and
// returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" || name == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		errorf(stderr, "unknown command %q", name)
		if s := closest(name, names); s != "" {
			hintf(stderr, "did you mean docket %s?", s)
		} else {
			hintf(stderr, "docket help lists the commands")
		}
		return 2
	}
	if !protocolStdout[name] && asksHelp(args[1:]) {
		// A command's -h prints its usage on stdout, and exits 0.
		stderr = stdout
	}
	// One signal setup for every command: SIGINT and SIGTERM end ctx (its
	// cause names the signal), and a command winds down by it (the pre
	// hook blocks, docket mcp stops its server and records the session's
	// end). A second signal gets the default action: it ends the process.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return cmd(ctx, args[1:], stdin, stdout, stderr)
}

// errorf prints an error the way every docket command does.
func errorf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "docket: error: "+format+"\n", args...)
}

// hintf prints a hint.
func hintf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "docket: hint: "+format+"\n", args...)
}

// warnf prints a warning.
func warnf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "docket: warning: "+format+"\n", args...)
}

// flagExit is the exit code for a command whose flags did not parse: 0
// after -h printed its usage, 2 for a bad flag (already reported).
// newFlagSet returns the flag set of a command: errors and the usage text
// go to stderr, and -h prints usage.
//
// A flag that does not parse is reported in one line, with the flag it
// was probably meant to be, not with the whole usage.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	out := &flagOutput{}
	fs.SetOutput(out)
	fs.Usage = func() {
		if out.failed == "" {
			fmt.Fprint(stderr, usage)
			return
		}
		cmd := strings.TrimPrefix(name, "docket ")
		errorf(stderr, "%s: %s", cmd, out.failed)
		if m := unknownFlag().FindStringSubmatch(out.failed); m != nil {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			if s := closest(m[1], names); s != "" {
				hintf(stderr, "did you mean -%s? (docket %s -h lists the options)", s, cmd)
				return
			}
		}
		hintf(stderr, "docket %s -h lists the options", cmd)
	}
	return fs
}

// flagOutput takes the flag package's own error line, which newFlagSet's
// Usage reports its way.
type flagOutput struct{ failed string }

func (o *flagOutput) Write(p []byte) (int, error) {
	if s := strings.TrimSpace(string(p)); s != "" {
		o.failed = s
	}
	return len(p), nil
}

// unknownFlag is compiled at first use, not at every docket start.
var unknownFlag = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^flag provided but not defined: -+(\S+)$`)
})

// protocolStdout are the commands whose stdout is a protocol's, read by
// an agent or an MCP client: their -h stays on stderr. A hook command with
// -h in it must block (exit 2, the reason on stderr, nothing on stdout).
var protocolStdout = map[string]bool{"hook": true, "mcp": true, "demo-mcp-server": true}

// asksHelp reports whether a command's arguments ask for its usage.
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

// closest returns the candidate nearest to s (edit distance at most 2, or
// a third of its length), or "" when none is near.
func closest(s string, candidates []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// findProject returns the project a command works on (store.FindProject),
// or reports that there is none and returns false; the command then
// writes nothing and exits 2.
func findProject(stderr io.Writer, cmd string) (string, bool) {
	project, err := store.FindProject()
	if err != nil {
		errorf(stderr, "%s: %v", cmd, err)
		if errors.Is(err, store.ErrNoProject) {
			hintf(stderr, "run it in a project (or below one), or set one up with docket init in its root")
		}
		return "", false
	}
	return project, true
}
