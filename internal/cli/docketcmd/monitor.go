package docketcmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/plural"
)

const monitorUsage = `Usage:
    docket monitor -log URL|DIR -log-key VKEY -state DIR [-witness-policy FILE]
                   [-jwks FILE] [-once] [-interval D] [-stale D] [-alert-deny] [-exec CMD]

Follows a log. Each poll verifies the log's checkpoint (signature, witness
quorum) and its consistency with the last one verified, reads and verifies
every new entry and recomputes the root, checks chain links, equivocation
and issuer_sequence gaps (against the issuers' own checkpoints), and asks
every witness of the policy that has a URL for its latest cosigned
checkpoint of the log, to catch a split view. The state (DIR/state.json) is
saved only after the alerts it implies are written; evidence files go to
DIR/evidence. A catch-up saves it part-way too, every -commit-every
entries, so a monitor stopped in the middle (even by SIGKILL) resumes
there: it reads only the rest of the log.

Alerts are JSON lines on stdout and "docket: alert:" lines on stderr; kinds:
fork, witness_split_view, root_mismatch, bad_entry, equivocation,
chain_break, issuer_sequence_gap, unknown_issuer (with -jwks: one per issuer
and poll, or stretch of a catch-up, with a count), stale_log (with -stale), deny_decision (with
-alert-deny, a notice). A poll lists at most 100 alerts of a kind and counts
the rest in one more.

Options:
    -state DIR        the monitor's state and evidence (created if missing)
    -once             poll once and exit
    -interval D       time between polls (default 30s)
    -stale D          alert when the log has not grown for D (default off)
    -commit-every N   entries a catch-up reads between saves of its state
                      (default 65536)
    -jwks FILE        the known issuers: others raise unknown_issuer
    -alert-deny       a notice for every logged deny decision
    -exec CMD         run "sh -c CMD" per alert with DOCKET_ALERT_KIND,
                      DOCKET_ALERT_MESSAGE and DOCKET_EVIDENCE set
` + profileOptions + `
With -once and no alert, one line on stderr says what was checked: the
checkpoint's size, the size it is consistent with, how many new entries were
read and how many witnesses compared.

Exit status: 0 no alert (with -once) or stopped by a signal, 1 some alert
(other than a notice), 2 the log could not be read or verified.
`

func runMonitor(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("monitor", monitorUsage, stderr)
	var lf logFlags
	lf.register(fs)
	state := fs.String("state", "", "")
	jwks := fs.String("jwks", "", "")
	once := fs.Bool("once", false, "")
	interval := fs.Duration("interval", 30*time.Second, "")
	stale := fs.Duration("stale", 0, "")
	alertDeny := fs.Bool("alert-deny", false, "")
	execCmd := fs.String("exec", "", "")
	commitEvery := fs.Uint64("commit-every", audit.DefaultCommitEvery, "")
	var pf profileFlags
	pf.register(fs)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	stopProfile, ok := pf.run(stderr, "monitor")
	if !ok {
		return 2
	}
	defer stopProfile()
	if *state == "" {
		errorf(stderr, "monitor: -state DIR is required")
		return 2
	}
	f, v, err := lf.open()
	if err != nil {
		errorf(stderr, "monitor: %v", err)
		return 2
	}
	keys, err := loadKeys("", *jwks, "")
	if err != nil {
		errorf(stderr, "monitor: %v", err)
		return 2
	}
	witnesses := policyWitnessURLs(v.Policy())
	cfg := audit.MonitorConfig{Fetcher: f, Verifier: v, Witnesses: witnesses, HTTPClient: &http.Client{Timeout: defaultHTTPTimeout},
		StateDir: *state, CommitEvery: *commitEvery, Keys: keys, AlertDeny: *alertDeny, Stale: *stale, Exec: *execCmd, Alerts: stdout, Human: stderr,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if f, ok := stderr.(*os.File); ok && audit.IsTerminal(f) {
		cfg.Progress = stderr
	}
	m, err := audit.NewMonitor(cfg)
	if err != nil {
		errorf(stderr, "monitor: %v", err)
		return 2
	}
	if m.Read() < m.Size() {
		fmt.Fprintf(stderr, "docket: monitor: resuming a catch-up at entry %d of %d\n", m.Read(), m.Size())
	}
	code := 0
	for {
		before := m.Size()
		alerts, err := m.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return code
			}
			errorf(stderr, "monitor: %v", err)
			if *once {
				return 2
			}
		}
		for _, a := range alerts {
			if !a.Notice {
				code = 1
			}
		}
		if *once {
			if err == nil && code == 0 {
				fmt.Fprintln(stderr, onceSummary(before, m.Size(), len(witnesses), len(alerts)))
			}
			return code
		}
		select {
		case <-ctx.Done():
			return code
		case <-time.After(*interval):
		}
	}
}

// policyWitnessURLs returns the URLs of the witnesses of a policy, which
// may be nil.
func policyWitnessURLs(p *c2sp.Policy) []string {
	if p == nil {
		return nil
	}
	var urls []string
	for _, w := range p.Witnesses {
		if w.URL != "" {
			urls = append(urls, w.URL)
		}
	}
	return urls
}

// onceSummary is the line monitor -once prints when it raised no alert: what
// it checked, so that silence is never the only sign of success.
func onceSummary(before, size uint64, witnesses, notices int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "docket: monitor: no alert: the log's checkpoint of size %d verifies", size)
	if before > 0 {
		fmt.Fprintf(&b, " and is consistent with size %d", before)
	}
	fmt.Fprintf(&b, "; %s read and checked", plural.Count(size-min(before, size), "new entry"))
	fmt.Fprintf(&b, "; %s compared", plural.Count(witnesses, "witness"))
	if notices > 0 {
		fmt.Fprintf(&b, "; %s", plural.Count(notices, "notice"))
	}
	return b.String()
}
