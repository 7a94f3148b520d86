package docketcmd

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/explorer"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
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
DIR/evidence.

Alerts are JSON lines on stdout and "docket: alert:" lines on stderr; kinds:
fork, witness_split_view, root_mismatch, bad_entry, equivocation,
chain_break, issuer_sequence_gap, unknown_issuer (with -jwks), stale_log
(with -stale), deny_decision (with -alert-deny, a notice).

Options:
    -state DIR        the monitor's state and evidence (created if missing)
    -once             poll once and exit
    -interval D       time between polls (default 30s)
    -stale D          alert when the log has not grown for D (default off)
    -jwks FILE        the known issuers: others raise unknown_issuer
    -alert-deny       a notice for every logged deny decision
    -exec CMD         run "sh -c CMD" per alert with DOCKET_ALERT_KIND,
                      DOCKET_ALERT_MESSAGE and DOCKET_EVIDENCE set

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
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
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
	witnesses, err := policyWitnessURLs(lf.policy)
	if err != nil {
		errorf(stderr, "monitor: %v", err)
		return 2
	}
	cfg := audit.MonitorConfig{Fetcher: f, Verifier: v, Witnesses: witnesses, HTTPClient: &http.Client{Timeout: defaultHTTPTimeout},
		StateDir: *state, Keys: keys, AlertDeny: *alertDeny, Stale: *stale, Exec: *execCmd, Alerts: stdout, Human: stderr,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if f, ok := stderr.(*os.File); ok && audit.IsTerminal(f) {
		cfg.Progress = stderr
	}
	m, err := audit.NewMonitor(cfg)
	if err != nil {
		errorf(stderr, "monitor: %v", err)
		return 2
	}
	code := 0
	for {
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
			return code
		}
		select {
		case <-ctx.Done():
			return code
		case <-time.After(*interval):
		}
	}
}

// policyWitnessURLs returns the URLs of the witnesses of a policy file.
func policyWitnessURLs(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := c2sp.ParsePolicy(b)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, w := range p.Witnesses {
		if w.URL != "" {
			urls = append(urls, w.URL)
		}
	}
	return urls, nil
}

const exploreUsage = `Usage:
    docket explore -log URL|DIR -log-key VKEY [-witness-policy FILE] [-listen ADDR]

Serves a read-only web page over the log: its verified checkpoint, the
newest entries, each entry with its receipt and a recomputed inclusion
proof, and each issuer's verifiable index (check a downloaded one with
docket verify-index).

Options:
    -listen ADDR   where to serve (default 127.0.0.1:7390)
`

func runExplore(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore", exploreUsage, stderr)
	var lf logFlags
	lf.register(fs)
	listen := fs.String("listen", "127.0.0.1:7390", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	f, v, err := lf.open()
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	e, err := explorer.New(explorer.Config{Fetcher: f, Verifier: v, Logger: logger})
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	fmt.Fprintf(stdout, "docket: exploring the log at http://%s/\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		errorf(stderr, "explore: %v", err)
		return 1
	}
	return 0
}

const exportUsage = `Usage:
    docket export -o DIR [-session ID]...
    docket export trace -session ID [options]   (a TRACE Trust Record: docket export trace -h)

Writes what an operator hands an auditor, in one directory: the session
chains, their tlog-proofs, the issuer's JWKS, the policy files, the witness
policy and the log's key, with a manifest (docket-bundle.json). docket
verify and docket audit take the directory as it is.
`

func runExport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "trace" {
		return runExportTrace(ctx, args[1:], stdin, stdout, stderr)
	}
	fs := newFlagSet("export", exportUsage, stderr)
	out := fs.String("o", "", "")
	var sessions multiFlag
	fs.Var(&sessions, "session", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *out == "" {
		errorf(stderr, "export: -o DIR is required")
		return 2
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "export: %v", err)
		return 2
	}
	st := store.Open(project)
	n, err := exportBundle(st, project, *out, sessions)
	if err != nil {
		errorf(stderr, "export: %v", err)
		return 2
	}
	fmt.Fprintf(stdout, "docket: exported %d sessions to %s\n", n, *out)
	return 0
}

// exportBundle copies the store's chains, proofs, keys and policies into
// dir, which must not exist yet.
func exportBundle(st *store.Store, project, dir string, only []string) (int, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	cfg, err := st.LoadConfig()
	if err != nil {
		return 0, err
	}
	names, err := st.Sessions()
	if err != nil {
		return 0, err
	}
	out := &store.Store{Dir: dir}
	n := 0
	for _, name := range names {
		rs, err := st.Receipts(name)
		if err != nil {
			return 0, err
		}
		if len(only) > 0 && !selectedSession(rs, only) {
			continue
		}
		n++
		if err := copyFile(st.ChainPath(name), out.ChainPath(name), 0o644); err != nil {
			return 0, err
		}
		for seq := int64(1); seq <= int64(len(rs)); seq++ {
			proof, err := st.ReadProof(name, seq)
			if err != nil {
				continue // not yet logged
			}
			if err := os.MkdirAll(out.ProofDir(name), 0o755); err != nil {
				return 0, err
			}
			if err := os.WriteFile(out.ProofPath(name, seq), proof, 0o644); err != nil {
				return 0, err
			}
		}
	}
	m := bundle{LogURL: cfg.LogURL, LogKey: cfg.LogKey}
	if key, err := receipts.LoadPrivateKey(st.KeyPath()); err == nil {
		j, _ := jsonMarshal(map[string]any{"keys": []any{receipts.JWK(key.Public().(ed25519PublicKey))}})
		if err := os.WriteFile(filepath.Join(dir, "issuers.jwks"), j, 0o644); err != nil {
			return 0, err
		}
		m.JWKS = "issuers.jwks"
	}
	if cfg.WitnessPolicy != "" {
		if err := copyFile(cfg.WitnessPolicyPath(project), filepath.Join(dir, "witnesses.policy"), 0o644); err != nil {
			return 0, err
		}
		m.WitnessPolicy = "witnesses.policy"
	}
	if ents, err := os.ReadDir(st.PolicyDir()); err == nil {
		for _, e := range ents {
			if e.Type().IsRegular() {
				if err := copyFile(filepath.Join(st.PolicyDir(), e.Name()), filepath.Join(dir, "policy", e.Name()), 0o644); err != nil {
					return 0, err
				}
			}
		}
	}
	j, _ := jsonMarshal(m)
	return n, os.WriteFile(filepath.Join(dir, bundleManifest), j, 0o644)
}

func selectedSession(rs [][]byte, only []string) bool {
	if len(rs) == 0 {
		return false
	}
	var p struct {
		Payload struct {
			SessionID string `json:"session_id"`
		} `json:"payload"`
	}
	if jsonUnmarshal(rs[0], &p) != nil {
		return false
	}
	for _, s := range only {
		if s == p.Payload.SessionID {
			return true
		}
	}
	return false
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

var (
	jsonMarshal   = func(v any) ([]byte, error) { b, err := json.MarshalIndent(v, "", "  "); return append(b, '\n'), err }
	jsonUnmarshal = json.Unmarshal
)

type ed25519PublicKey = ed25519.PublicKey
