package docketcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/reconcile"
	"github.com/docketlog/docket/store"
)

const reconcileUsage = `Usage:
    docket reconcile -agent claude|gemini|codex [-json] [RECORD...]

Reconciles what an agent did with what the gate decided, after the fact: it
reads the agent's own record of each session (Claude Code's transcript and
its subagents' files, Codex's rollout file, Gemini CLI's chat recording;
without RECORD, every record the agent kept of sessions in this project)
and matches every tool call in it with the receipts of its session. The
hooks do this at Stop and SessionEnd; run it for sessions that ran no hook
at all (Gemini CLI with --skip-trust, Codex in an untrusted project, hooks
disabled) or were never ended.

For a session without session_end, each call without a decision is signed
into its chain as an unmediated_call receipt, and the session is ended with
the record's transcript_hash. For a session that ended, nothing is signed:
the record is compared with the transcript_hash of its session_end (a
record edited after the session ended no longer matches).

Output, one line per finding (-json: one object each):
    unmediated_call  SESSION TOOL [mcp server NAME] id ID at FILE:LINE ran|not run
    record_changed   SESSION: how the record differs from its session_end

Exit status: 0 every call had a decision and every record matches, 1 some
finding, 2 error.

Examples:
    docket reconcile -agent gemini
    docket reconcile -agent claude ~/.claude/projects/-home-me-project/SESSION.jsonl
`

func runReconcile(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docket reconcile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, reconcileUsage) }
	agentName := fs.String("agent", "", "the agent whose records are read")
	asJSON := fs.Bool("json", false, "one JSON object per finding")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	agent, err := hook.ParseAgent(*agentName)
	if err != nil || *agentName == "" {
		errorf(stderr, "reconcile: -agent claude, gemini or codex is required")
		return 2
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "reconcile: %v", err)
		return 2
	}
	st := store.Open(project)
	home, _ := os.UserHomeDir()
	files := fs.Args()
	if len(files) == 0 {
		if files, err = reconcile.Find(ctx, agent.ReceiptName(), project, home); err != nil {
			errorf(stderr, "reconcile: %v", err)
			return 2
		}
	}
	key, err := st.Key()
	if err != nil {
		errorf(stderr, "reconcile: %v", err)
		return 2
	}
	g, err := gate.Open(ctx, project, gate.Options{Home: home})
	if err != nil {
		errorf(stderr, "reconcile: %v", err)
		return 2
	}
	end := func(session, transcriptHash string) error {
		_, err := g.Record(ctx, gate.Event{HookEvent: receipts.SessionEnd, SessionID: session,
			Agent: agent.ReceiptName(), TranscriptHash: transcriptHash})
		return err
	}
	reports, err := reconcile.Project(ctx, st, key, agent.ReceiptName(), files, end)
	findings := 0
	for _, r := range reports {
		for _, c := range append(r.Unmediated, r.Late...) {
			findings++
			printCall(stdout, *asJSON, r.Session, c)
		}
		if r.Changed != "" {
			findings++
			if *asJSON {
				b, _ := json.Marshal(map[string]string{"kind": "record_changed", "session": r.Session, "record": r.File, "message": r.Changed})
				fmt.Fprintf(stdout, "%s\n", b)
			} else {
				fmt.Fprintf(stdout, "record_changed %s: %s (%s)\n", r.Session, r.Changed, filepath.Base(r.File))
			}
		}
	}
	if err != nil {
		errorf(stderr, "reconcile: %v", err)
		return 2
	}
	if len(reports) == 0 {
		hintf(stderr, "no %s record of a session in %s", agent, project)
	}
	if findings > 0 {
		return 1
	}
	return 0
}

// printCall prints one unmediated call.
func printCall(w io.Writer, asJSON bool, session string, c reconcile.Call) {
	if asJSON {
		b, _ := json.Marshal(map[string]any{"kind": receipts.UnmediatedCall, "session": session, "tool_name": c.Tool,
			"tool_use_id": c.ID, "tool_input_hash": c.InputHash, "transcript_position": c.Position, "tool_ran": c.Ran, "mcp_server": c.Server()})
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	ran := "not run"
	if c.Ran {
		ran = "ran"
	}
	server := ""
	if s := c.Server(); s != "" {
		server = " mcp server " + s
	}
	fmt.Fprintf(w, "unmediated_call %s %s%s id %q at %s %s\n", session, c.Tool, server, c.ID, c.Position, ran)
}
