package docketcmd

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/docketlog/docket/internal/demo"
)

const demoUsage = `Usage:
    docket demo

Runs Docket end to end on its embedded defaults, in a temporary directory, and
says what each step proves:

    1. three witnesses and a log (Tessera POSIX storage) that publishes only
       checkpoints two of them cosigned, started in this process on loopback
       HTTP: the witness and log packages docket-witness and docket-log run;
    2. docket init -agent all in a fresh project: issuer key, default Cedar
       policy, the hooks of Claude Code, Gemini CLI and Codex;
    3. an agent session: each tool call goes through "docket hook pre" exactly
       as Claude Code runs it (JSON on stdin, exit 2 blocks), and each call
       that ran through "docket hook post";
    4. docket sync: every receipt submitted, its proof verified and stored;
    5. docket verify: signatures, chain, inclusion and witness quorum, offline;
    6. an operator who rewrites or drops a receipt is caught;
    7. an MCP server behind docket mcp: one call allowed, one denied before
       it reaches the server;
    8. docket audit reads the whole log back: the honest store passes, a copy
       that withholds a session and a copy showing a receipt the log never
       got are caught; docket monitor follows the log once.

The hooks, sync, verify, audit and monitor run as the agent and the user
run them: this docket binary, one process each. Nothing is built.
`

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", demoUsage, stderr)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		errorf(stderr, "demo: %v", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "docket-demo-")
	if err != nil {
		errorf(stderr, "demo: %v", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := demo.Run(ctx, stdout, dir, self); err != nil {
		errorf(stderr, "demo: %v", err)
		return 1
	}
	return 0
}

// runDemoMCPServer is the demo's stdio MCP server (not listed in the
// usage): docket demo-mcp-server DIR.
func runDemoMCPServer(_ context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) int {
	if len(args) != 1 {
		return 2
	}
	demo.NotesServer(args[0], stdin, stdout)
	return 0
}
