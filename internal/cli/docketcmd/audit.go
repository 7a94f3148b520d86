package docketcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/bundle"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const auditUsage = `Usage:
    docket audit -log URL|DIR -log-key VKEY [-witness-policy FILE] [-jwks FILE | -key-file FILE]
                 [-issuer KID]... [-session ID]... [-json] [-evidence DIR] [-state DIR]
                 [-require-reconciled] [PATH...]

Reads the whole log back and compares it with the receipts you were shown.
The log is read through its tlog-tiles API (a URL) or its storage directory
(DIR); every entry's signature is checked and the tree root recomputed from
the entries and compared with a checkpoint signed by the log key and
cosigned by the witness quorum, so a lying fetch path cannot hide anything.

A PATH is a .docket directory (or a project holding one), a session chain
(.jsonl), or a bundle written by docket export, whose log key, witness
policy and issuer keys are used when the flags do not give them.

Findings, one line each (-json: one object each), each with an evidence
file where the log's own signatures prove it:
    invalid_receipt      a presented receipt fails verification
    dropped              presented, but not in the log
    withheld             in the log, but not presented (one per session, with a count)
    equivocation         two receipts for one issuer and (session) sequence
    issuer_sequence_gap  the issuer's logged receipts skip a number
    chain_break, unlinked_execution, executed_deny, bad_entry, root_mismatch
    open_session         (notice) a session without session_end
    unenforced           (notice) decisions observe mode answered as allow, per session
    unmediated_call      a call in the agent's own record the gate never decided
                         (signed by docket hook at Stop/SessionEnd, or docket reconcile)
    unreconciled         (-require-reconciled) a session whose session_end records
                         no transcript_hash of the agent's record read whole
At most 100 findings of a kind are listed with evidence; one more counts the
rest (narrow with -issuer and -session to list them).

Each receipt is parsed and verified once: a presented receipt that the log
holds byte for byte is checked from what was read of the log. Memory is about
130 bytes per log entry, whatever the entries hold (docs/audit.md). On a
terminal, progress goes to stderr.

Options:
    -log URL|DIR          the log's URL prefix, or its POSIX storage directory
    -log-key VKEY         the log's checkpoint verifier key
    -witness-policy FILE  C2SP tlog-policy: the checkpoint must satisfy its quorum
    -jwks FILE, -key-file FILE   trusted issuer keys, for the presented receipts
    -issuer KID           compare only this issuer's receipts (repeatable;
                          default: the issuers of the presented receipts)
    -session ID           compare only this session (repeatable)
    -evidence DIR         where evidence files go (default: a new temporary
                          directory, removed if no finding needs it)
    -state DIR            keep what was read of the log in DIR: the next audit
                          with the same DIR proves the log consistent with it and
                          reads and verifies only the entries added since
    -json                 one JSON object per finding
    -explorer URL         link each finding to its pages on docket explore at URL
                          (its evidence's entries, else its session or issuer)
    -require-reconciled   every selected session must end reconciled with its
                          agent's record (docs/hook.md)
` + profileOptions + `
Exit status: 0 no finding but notices, 1 some finding, 2 undecidable (no trusted key,
unreachable log, a checkpoint that does not verify, a tile or bundle larger
than tlog-tiles allows).

Examples:
    docket audit -log https://log.example -log-key "$VKEY" -witness-policy w.policy -key-file issuer.pub .docket
    docket audit -log /var/lib/docket-log -log-key "$VKEY" bundle/
`

// defaultHTTPTimeout bounds each request to a log or witness.
const defaultHTTPTimeout = 30 * time.Second

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// logFlags are the flags every command that reads a log back shares.
type logFlags struct {
	log, logKey, policy string
}

func (lf *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.log, "log", "", "")
	fs.StringVar(&lf.logKey, "log-key", "", "")
	fs.StringVar(&lf.policy, "witness-policy", "", "")
}

// open returns the log's fetcher and a verifier of its checkpoints.
func (lf *logFlags) open() (audit.Fetcher, *c2sp.ProofVerifier, error) {
	if lf.log == "" || lf.logKey == "" {
		return nil, nil, errors.New("-log and -log-key are required")
	}
	v, err := c2sp.LoadProofVerifier(lf.logKey, lf.policy)
	if err != nil {
		return nil, nil, err
	}
	f, err := newFetcher(lf.log)
	return f, v, err
}

// newFetcher reads a log at an http(s) URL prefix or in a storage directory.
func newFetcher(loc string) (audit.Fetcher, error) {
	if strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://") {
		return audit.NewHTTPFetcher(loc, &http.Client{Timeout: defaultHTTPTimeout})
	}
	if fi, err := os.Stat(loc); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("-log %s: neither an http(s) URL nor a directory", loc)
	}
	return audit.FileFetcher{Root: loc}, nil
}

// readCheckpoint reads and verifies the log's checkpoint.
func readCheckpoint(ctx context.Context, f audit.Fetcher, v *c2sp.ProofVerifier) ([]byte, *c2sp.Checkpoint, error) {
	raw, err := f.ReadCheckpoint(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the log's checkpoint: %w", err)
	}
	cp, err := v.VerifyCheckpoint(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("the log's checkpoint: %w", err)
	}
	return raw, cp, nil
}

func runAudit(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit", auditUsage, stderr)
	var lf logFlags
	lf.register(fs)
	jwks := fs.String("jwks", "", "")
	keyFile := fs.String("key-file", "", "")
	var issuers, sessions multiFlag
	fs.Var(&issuers, "issuer", "")
	fs.Var(&sessions, "session", "")
	evidence := fs.String("evidence", "", "")
	state := fs.String("state", "", "")
	asJSON := fs.Bool("json", false, "")
	requireReconciled := fs.Bool("require-reconciled", false, "")
	explorerURL := fs.String("explorer", "", "")
	var pf profileFlags
	pf.register(fs)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if err := checkExplorerURL(*explorerURL); err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	stopProfile, ok := pf.run(stderr, "audit")
	if !ok {
		return 2
	}
	defer stopProfile()
	var presented atomic.Int64
	chains, b, err := readPresented(ctx, fs.Args(), &presented)
	if err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	given, jwksGiven := lf, *jwks != ""
	bundleDefaults(b, &lf, jwks)
	if b != nil {
		warnBundleTrust(stderr, "the bundle", !jwksGiven && *jwks != "", given.logKey == "" && lf.logKey != "", given.policy == "" && lf.policy != "")
	}
	projectDefaults(&lf, jwks, keyFile, stderr)
	keys, err := loadKeys("", *jwks, *keyFile)
	if err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	if keys == nil && len(chains) > 0 {
		errorf(stderr, "audit: no trusted issuer key (-jwks or -key-file): the presented receipts cannot be verified")
		return 2
	}
	f, v, err := lf.open()
	if err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	raw, cp, err := readCheckpoint(ctx, f, v)
	if err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	if *evidence == "" {
		// A directory of its own, removed again if no finding needed
		// evidence: os.Remove leaves a directory that holds files.
		if *evidence, err = os.MkdirTemp("", "docket-evidence-"); err != nil {
			errorf(stderr, "audit: %v", err)
			return 2
		}
		defer os.Remove(*evidence)
	}
	// What an audit keeps is a ledger of records without pointers, which a
	// collection does not scan: collecting at half the live heap's growth
	// (GOGC=50, unless GOGC is set) costs little CPU and keeps the peak
	// near the ledger's size instead of twice it (docs/audit.md).
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(50))
	}
	cfg := audit.Config{Fetcher: f, Checkpoint: raw, Size: cp.Size, Root: cp.Root, Keys: keys,
		Issuers: issuers, Sessions: sessions, EvidenceDir: *evidence, StateDir: *state, RequireReconciled: *requireReconciled}
	if f, ok := stderr.(*os.File); ok && audit.IsTerminal(f) {
		cfg.Progress = stderr
	}
	findings, err := audit.Run(ctx, cfg, chains)
	if err != nil {
		errorf(stderr, "audit: %v", err)
		return 2
	}
	violations := 0
	for _, fd := range findings {
		if !fd.Notice {
			violations++
		}
		if *asJSON {
			j, _ := json.Marshal(withExplorerPages(fd, *explorerURL))
			fmt.Fprintf(stdout, "%s\n", j)
		}
	}
	if !*asJSON {
		fmt.Fprint(stdout, audit.Report(findings))
		fmt.Fprint(stdout, explorerLinks(findings, *explorerURL))
	}
	fmt.Fprintf(stderr, "docket: audited %s in %s against the log of size %d: %s\n", plural.Count(presented.Load(), "presented receipt"), plural.Count(len(chains), "chain"), cp.Size, plural.Count(violations, "finding"))
	if violations > 0 {
		return 1
	}
	return 0
}

// readPresented finds the session chains of PATHs: .docket directories,
// projects holding one, bundles and .jsonl files. It returns the bundle's
// manifest if a PATH was a bundle. Chains are read when the audit asks
// (audit.Chain.Load), a few at a time; n counts their receipts.
func readPresented(ctx context.Context, paths []string, n *atomic.Int64) ([]audit.Chain, *bundle.Bundle, error) {
	lazy := func(source string, read func() ([][]byte, error)) audit.Chain {
		var counted atomic.Bool
		return audit.Chain{Source: source, Load: func() ([][]byte, error) {
			rs, err := read()
			if err == nil && !counted.Swap(true) {
				n.Add(int64(len(rs)))
			}
			return rs, err
		}}
	}
	var chains []audit.Chain
	var b *bundle.Bundle
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			chains = append(chains, lazy(p, func() ([][]byte, error) {
				data, err := os.ReadFile(p)
				return receipts.SplitLines(data), err
			}))
			continue
		}
		dir := p
		if pb, err := bundle.Open(ctx, p); err == nil {
			b = pb
		} else if !errors.Is(err, bundle.ErrNotBundle) {
			return nil, nil, err
		} else if _, err := os.Stat(filepath.Join(p, store.DirName)); err == nil {
			dir = filepath.Join(p, store.DirName)
		}
		st := store.OpenDir(dir)
		names, err := st.Sessions()
		if err != nil {
			return nil, nil, err
		}
		if len(names) == 0 {
			return nil, nil, fmt.Errorf("%s: no session chains (want a .docket directory, a bundle or .jsonl files)", p)
		}
		for _, name := range names {
			chains = append(chains, lazy(st.ChainPath(name), func() ([][]byte, error) { return st.Receipts(name) }))
		}
	}
	return chains, b, nil
}
