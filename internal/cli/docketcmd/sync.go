package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/docketlog/docket/hook"
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
appended since, not the project's history.

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
    1  receipts remain pending (log unreachable, timeout) or were rejected
    2  usage or configuration error
`

func runSync(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("sync", syncUsage, stderr)
	dir := fl.String("dir", "", "")
	timeout := fl.Duration("timeout", 2*time.Minute, "")
	tokenEnv := fl.String("token-env", "", "")
	verbose := fl.Bool("v", false, "")
	every := fl.Duration("checkpoint-every", 5*time.Minute, "")
	rescan := fl.Bool("rescan", false, "")
	if err := fl.Parse(args); err != nil {
		return flagExit(err)
	}
	if fl.NArg() > 0 {
		errorf(stderr, "sync: unexpected arguments %q", fl.Args())
		return 2
	}
	project := *dir
	if project == "" {
		p, err := store.ProjectDir()
		if err != nil {
			errorf(stderr, "%v", err)
			return 2
		}
		project = p
	}
	opts := store.SyncOptions{CheckpointEvery: *every, Rescan: *rescan}
	if *tokenEnv != "" {
		opts.Token = os.Getenv(*tokenEnv)
		if opts.Token == "" {
			errorf(stderr, "sync: environment variable %s is empty", *tokenEnv)
			return 2
		}
	}
	if *verbose {
		opts.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	st := store.Open(project)
	// Events a hook had to spool are receipted first, so they are synced too.
	home, _ := os.UserHomeDir()
	if n, err := hook.DrainSpool(st, home); err != nil {
		warnf(stderr, "spooled events: %v", err)
	} else if n > 0 {
		fmt.Fprintf(stdout, "receipted %d spooled events\n", n)
	}
	res, err := st.Sync(ctx, opts)
	if res.Stored > 0 {
		fmt.Fprintf(stdout, "stored %d proofs\n", res.Stored)
	}
	if res.Checkpoint > 0 {
		fmt.Fprintf(stdout, "logged an issuer checkpoint: every receipt up to issuer_sequence %d is in the log\n", res.Checkpoint)
	}
	for _, e := range res.Errors {
		errorf(stderr, "%v", e)
	}
	switch {
	case errors.Is(err, store.ErrNoLog):
		errorf(stderr, "%v", err)
		return 2
	case err != nil && res.Pending == 0:
		errorf(stderr, "%v", err)
		return 2
	case res.Pending > 0:
		if err != nil {
			errorf(stderr, "%v", err)
		}
		warnf(stderr, "%d receipts are still pending", res.Pending)
		hintf(stderr, "run docket sync again when the log is reachable; nothing is lost")
		return 1
	case len(res.Errors) > 0:
		return 1
	}
	if res.Stored == 0 {
		fmt.Fprintln(stdout, "nothing pending")
	}
	return 0
}
