package docketcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/store"
)

const syncUsage = `Usage:
    docket sync [-dir PROJECT] [-timeout D] [-rescan] [-v]

Submits every receipt under PROJECT/.docket that has no proof yet to the
configured log, verifies each returned proof (log signature, inclusion of
the exact entry, witness quorum when a policy is configured) and stores it
in the session's proof journal, .docket/sessions/<session>.proofs (docket
export writes one .tlog-proof file per receipt). Transient failures are
retried with backoff (honouring Retry-After) until the timeout. Runs take
turns on a lock, so it is safe to start many; a run exits when nothing is
pending. A run starts where the last one stopped, so it costs what was
appended since, not the project's history. It also verifies again the
stored proofs of every session whose proof journal changed since it was
last found good (all of them with -rescan), and fetches again from the log
those that no longer verify (damaged on disk).

Options:
    -dir PROJECT   project root (default $CLAUDE_PROJECT_DIR or the current directory)
    -timeout D     give up retrying after D (default 2m); what is left stays pending
    -token-env V   read a bearer token for the log from environment variable V
    -checkpoint-every D
                   log an issuer checkpoint (issuer_checkpoint: every receipt up
                   to its issuer_high_water is in the log, and the open sessions)
                   at most every D, when receipts were signed since the last
                   (default 5m; 0: whenever there are; negative: never)
    -rescan        read every chain and proof instead of starting where the
                   last run stopped (after proofs were removed or restored by hand)
    -v             report each retry on stderr

Exit codes:
    0  nothing is pending
    1  receipts remain pending (log unreachable, timeout) or were rejected,
       or another docket sync held the lock until the timeout
    2  usage or configuration error

The outcome of every run, the background ones the hooks start included, is
appended to .docket/sync.log (its last 50 runs), which docket status and
docket doctor read. The error names the cause (connection refused, the
witness quorum not met and which witnesses, a proof that does not verify
under the configured log key) and the fix, without -v. On a terminal, the
progress and what the log answers while retrying go to stderr.

Environment:
    OTEL_EXPORTER_OTLP_ENDPOINT  export one OpenTelemetry span per tool call of the
                                 hooks whose receipts this run proved (OTLP/HTTP; the
                                 other OTEL_* variables apply; docs/mcp.md)
`

func runSync(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("sync", syncUsage, stderr)
	dir := fl.String("dir", "", "")
	timeout := fl.Duration("timeout", 2*time.Minute, "")
	tokenEnv := fl.String("token-env", "", "")
	verbose := fl.Bool("v", false, "")
	every := fl.Duration("checkpoint-every", 5*time.Minute, "")
	rescan := fl.Bool("rescan", false, "")
	background := fl.Bool("background", false, "") // started by a hook: not in the usage
	if err := fl.Parse(args); err != nil {
		return flagExit(err)
	}
	if fl.NArg() > 0 {
		errorf(stderr, "sync: unexpected arguments %q", fl.Args())
		return 2
	}
	project := *dir
	switch {
	case project == "":
		p, ok := findProject(stderr, "sync")
		if !ok {
			return 2
		}
		project = p
	case !store.IsProject(project):
		errorf(stderr, "sync: %v: %s has no %s directory", store.ErrNoProject, project, store.DirName)
		return 2
	}
	// A background run gives up at once on a log that refuses connections:
	// the next hook starts another.
	opts := store.SyncOptions{CheckpointEvery: *every, Rescan: *rescan, FailFast: *background}
	if *tokenEnv != "" {
		opts.Token = os.Getenv(*tokenEnv)
		if opts.Token == "" {
			errorf(stderr, "sync: environment variable %s is empty", *tokenEnv)
			return 2
		}
	}
	tty := isTerminalOut(stderr)
	switch {
	case *verbose:
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	case tty:
		// On a terminal, say what the log answers while retrying.
		opts.Logger = slog.New(&retryHandler{w: stderr})
	}
	if tty {
		opts.Progress = func(stored, pending int) {
			fmt.Fprintf(stderr, "docket: sync: %s stored, %d pending\n", plural.Count(stored, "proof"), pending)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	st := store.Open(project)
	// Events a hook had to spool are receipted first, so they are synced too.
	home, _ := os.UserHomeDir()
	if n, err := hook.DrainSpool(st, home); err != nil {
		warnf(stderr, "spooled events: %v", err)
	} else if n > 0 {
		fmt.Fprintf(stdout, "receipted %s\n", plural.Count(n, "spooled event"))
	}
	// The outcome is recorded in the sync log under the sync lock.
	var rec store.SyncRecord
	var recErr error
	opts.Done = func(res store.SyncResult, err error) {
		rec = syncRecord(st, res, err, ctx.Err(), *background)
		recErr = st.RecordSync(rec)
	}
	// One span per tool call proven (OpenTelemetry, when configured).
	tel := openTelemetry(stderr)
	calls := tel.Calls()
	if calls != nil {
		opts.Proven = func(ps []store.ProvenReceipt) {
			for _, p := range ps {
				calls.Add(p.Receipt, p.Index)
			}
		}
	}
	res, err := st.Sync(ctx, opts)
	calls.Flush(chainLookup(st))
	closeTelemetry(ctx, tel)
	if res.Damaged > 0 {
		warnf(stderr, "%s did not verify (damaged on disk); fetched %d again from the log", plural.Count(res.Damaged, "stored proof"), res.Refetched)
	}
	if res.Stored > 0 {
		fmt.Fprintf(stdout, "stored %s\n", plural.Count(res.Stored, "proof"))
	}
	if res.Checkpoint > 0 {
		fmt.Fprintf(stdout, "logged an issuer checkpoint: every receipt up to issuer_sequence %d is in the log\n", res.Checkpoint)
	}
	for i, e := range res.Errors {
		if i == maxSyncErrors {
			errorf(stderr, "and %d more receipts", len(res.Errors)-i)
			break
		}
		errorf(stderr, "%v", e)
	}
	switch {
	case errors.Is(err, store.ErrNoLog):
		errorf(stderr, "%v", err)
		return 2
	case errors.Is(err, store.ErrSyncBusy):
		errorf(stderr, "%v: it is delivering the same receipts", err)
		hintf(stderr, "wait for it, or give this one longer: docket sync -timeout 10m")
		return 1
	}
	if recErr != nil {
		warnf(stderr, "%v", recErr)
	}
	switch {
	case rec.Error != "" && (err != nil || res.Pending > 0):
		errorf(stderr, "%s", rec.Error)
		if res.Pending > 0 {
			warnf(stderr, "%d receipts are still pending; nothing is lost", res.Pending)
		}
		hintf(stderr, "%s", rec.Fix)
		if res.Pending == 0 && res.Stored == 0 && len(res.Errors) == 0 {
			return 2 // nothing was delivered: configuration or store error
		}
		return 1
	case rec.Error != "":
		hintf(stderr, "%s", rec.Fix)
		return 1
	case err != nil:
		// Sync failed before it took the lock: nothing was recorded.
		errorf(stderr, "%v", err)
		return 2
	case res.Stored == 0:
		fmt.Fprintln(stdout, "nothing pending")
	}
	return 0
}

// syncRecord is the sync log's record of one run's outcome, with the
// cause of a failure named (explainLogErr) and its fix.
func syncRecord(st *store.Store, res store.SyncResult, err, ctxErr error, background bool) store.SyncRecord {
	rec := store.SyncRecord{Time: time.Now().UTC(), Background: background, Stored: res.Stored, Pending: res.Pending, Rejected: len(res.Errors)}
	var cause error
	switch {
	case err != nil || res.Pending > 0:
		cause = cmp.Or(res.LastErr, err)
		if cause == nil && len(res.Errors) > 0 {
			cause = res.Errors[0]
		}
		if cause == nil {
			cause = cmp.Or(ctxErr, errors.New("receipts remain pending"))
		}
	case len(res.Errors) > 0:
		cause = res.Errors[0]
	default:
		return rec
	}
	p := syncProblem(st, cause)
	rec.Error, rec.Fix = p.Cause, p.Fix
	return rec
}

// maxSyncErrors bounds the receipts' errors docket sync prints.
const maxSyncErrors = 3

// syncProblem explains an error of a sync of st.
func syncProblem(st *store.Store, err error) logProblem {
	cfg, cerr := st.Config()
	if cerr != nil {
		return logProblem{cerr.Error(), "fix " + st.ConfigPath() + ", or run docket init again"}
	}
	v, verr := st.ProofVerifier(cfg)
	if verr != nil {
		return logProblem{verr.Error(), "run docket doctor: it names the fix"}
	}
	return explainLogErr(err, cfg, v)
}

// retryHandler is the slog.Handler of docket sync on a terminal: one line
// per retry that says what the log answered, repeated only when it changes.
type retryHandler struct {
	w    io.Writer
	mu   sync.Mutex // guards last
	last string
}

func (h *retryHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retryHandler) WithGroup(string) slog.Handler            { return h }
func (h *retryHandler) Handle(_ context.Context, r slog.Record) error {
	var msg string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			msg = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if msg == "" || msg == h.last {
		return nil
	}
	h.last = msg
	fmt.Fprintf(h.w, "docket: sync: retrying: %s\n", msg)
	return nil
}
