package docketcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
	"github.com/docketlog/docket/timeline"
)

const sessionsUsage = `Usage:
    docket sessions [-json]

Lists the project's sessions: their receipts, decisions (allowed, denied,
not enforced), first and last time, and whether they ended.

Options:
    -json   one JSON object per session, a line each
`

const showUsage = `Usage:
    docket show [-json] SESSION

Prints a session as a timeline, from its receipt chain and the local
journal (docket init -journal): the time, the tool, the command or path,
the decision and the policy's reason, and whether the call then ran.
Inputs are shown only when the journal holds them, and redacted: tokens
and keys of well-known shapes, secret assignments, credentials in URLs and
what a command writes to a secret file (the names the default policy
keeps agents from: .env, *.pem, *.key, id_rsa…) are replaced by
[redacted]. The journal keeps the exact input.

Options:
    -json   one JSON object per entry, a line each
`

// sessionSummary is one line of docket sessions.
type sessionSummary struct {
	Session    string `json:"session"`
	Receipts   int    `json:"receipts"`
	Allowed    int    `json:"allowed"`
	Denied     int    `json:"denied"`
	Asked      int    `json:"asked"`
	Unenforced int    `json:"unenforced,omitempty"`
	FirstAt    string `json:"first"`
	LastAt     string `json:"last"`
	Ended      bool   `json:"ended"`
}

func runSessions(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket sessions", sessionsUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		errorf(stderr, "sessions: unexpected arguments %q", fs.Args())
		return 2
	}
	project, ok := findProject(stderr, "sessions")
	if !ok {
		return 2
	}
	s := store.Open(project)
	names, err := s.Sessions()
	if err != nil {
		errorf(stderr, "sessions: %v", err)
		return 2
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "SESSION\tRECEIPTS\tALLOWED\tASKED\tDENIED\tFIRST\tLAST\tENDED")
	}
	for _, name := range names {
		sum, err := summarize(s, name)
		if err != nil {
			errorf(stderr, "sessions: %v", err)
			return 2
		}
		if *asJSON {
			b, _ := json.Marshal(sum)
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		denied := fmt.Sprint(sum.Denied)
		if sum.Unenforced > 0 {
			denied += fmt.Sprintf(" (%d not enforced)", sum.Unenforced)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%v\n", sum.Session, sum.Receipts, sum.Allowed, sum.Asked, denied, sum.FirstAt, sum.LastAt, sum.Ended)
	}
	tw.Flush()
	return 0
}

// summarize counts a session's receipts and decisions.
func summarize(s *store.Store, name string) (sessionSummary, error) {
	sum := sessionSummary{Session: name}
	chain, err := s.Receipts(name)
	if err != nil {
		return sum, err
	}
	sum.Receipts = len(chain)
	for _, line := range chain {
		rc, err := receipts.Open(line, nil)
		if err != nil {
			continue
		}
		p := rc.Payload
		if sum.FirstAt == "" {
			sum.FirstAt = p.IssuedAt
		}
		sum.LastAt = p.IssuedAt
		if p.LifecycleEvent == "session_end" {
			sum.Ended = true
		}
		if p.DecisionReceiptHash != "" || p.Decision == "" {
			continue // an execution, or a lifecycle event
		}
		switch {
		case p.Decision == receipts.Allow:
			sum.Allowed++
		case p.Decision == receipts.RequireApproval:
			sum.Asked++
		default:
			sum.Denied++
			if p.Enforced != nil && !*p.Enforced {
				sum.Unenforced++
			}
		}
	}
	return sum, nil
}

func runShow(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket show", showUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		errorf(stderr, "show: want one SESSION")
		hintf(stderr, "docket sessions lists them")
		return 2
	}
	project, ok := findProject(stderr, "show")
	if !ok {
		return 2
	}
	s := store.Open(project)
	session := fs.Arg(0)
	have, err := s.Sessions()
	if err != nil {
		errorf(stderr, "show: %v", err)
		return 2
	}
	if !containsSession(have, session) {
		errorf(stderr, "show: no session %q", session)
		hintf(stderr, "the sessions are: %s", strings.Join(have, " "))
		return 2
	}
	var why func(string) string
	if eng, err := gate.LoadPolicy(s); err == nil {
		why = eng.Reason
	}
	entries, err := timeline.Build(s, store.SessionName(session), why)
	if err != nil {
		errorf(stderr, "show: %v", err)
		return 2
	}
	if *asJSON {
		for _, e := range entries {
			b, _ := json.Marshal(e)
			fmt.Fprintf(stdout, "%s\n", b)
		}
		return 0
	}
	journal := false
	for _, e := range entries {
		fmt.Fprintln(stdout, formatEntry(e))
		journal = journal || e.Input != ""
	}
	if !journal {
		hintf(stderr, "no inputs: the journal is off or empty for this session (docket init -journal keeps them)")
	}
	return 0
}

func containsSession(have []string, session string) bool {
	for _, h := range have {
		if h == store.SessionName(session) {
			return true
		}
	}
	return false
}

// formatEntry is one line of docket show.
func formatEntry(e timeline.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  #%-3d %-12s", e.Time, e.Sequence, e.Event)
	if e.Tool != "" {
		fmt.Fprintf(&b, " %s", e.Tool)
	}
	if e.Input != "" {
		fmt.Fprintf(&b, ": %s", e.Input)
	}
	if e.Decision != "" {
		fmt.Fprintf(&b, "  → %s", strings.ToUpper(e.Decision))
		if e.Enforced != nil && !*e.Enforced {
			b.WriteString(" (not enforced: observe mode)")
		}
		if len(e.PolicyIDs) > 0 && e.Decision != receipts.Allow {
			fmt.Fprintf(&b, " by %s", strings.Join(e.PolicyIDs, ", "))
		}
		if e.Why != "" {
			fmt.Fprintf(&b, ": %s", e.Why)
		} else if e.Reason != "" && e.Decision != receipts.Allow {
			fmt.Fprintf(&b, " [%s]", e.Reason)
		}
	}
	switch {
	case e.Outcome != "":
		fmt.Fprintf(&b, "; %s", e.Outcome)
	case e.Decision == receipts.Deny && (e.Enforced == nil || *e.Enforced):
		b.WriteString("; blocked")
	}
	return b.String()
}
