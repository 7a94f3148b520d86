package docketcmd

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const exportUsage = `Usage:
    docket export -o DIR [-session ID]...
    docket export trace -session ID [options]   (a TRACE Trust Record: docket export trace -h)

Writes what an operator hands an auditor, in one directory: the session
chains, their tlog-proofs (one .tlog-proof file per receipt, as
c2sp.org/tlog-proof names them), the issuer's JWKS, the policy files, the witness
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
	cfg, err := st.Config()
	if err != nil {
		return 0, err
	}
	names, err := st.Sessions()
	if err != nil {
		return 0, err
	}
	out := store.OpenDir(dir)
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
		// One .tlog-proof file per logged receipt, for third parties.
		proofs, err := st.Proofs(name)
		if err != nil {
			return 0, err
		}
		if _, err := store.WriteProofFiles(dir, name, proofs, 0o644); err != nil {
			return 0, err
		}
	}
	m := bundle{LogURL: cfg.LogURL, LogKey: cfg.LogKey}
	if key, err := st.Key(); err == nil {
		j, _ := jsonIndent(map[string]any{"keys": []any{receipts.JWK(key.Public().(ed25519.PublicKey))}})
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
	j, _ := jsonIndent(m)
	return n, os.WriteFile(filepath.Join(dir, bundleManifest), j, 0o644)
}

func selectedSession(rs [][]byte, only []string) bool {
	if len(rs) == 0 {
		return false
	}
	p, err := receipts.Open(rs[0], nil)
	if err != nil {
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

// jsonIndent is a bundle file's JSON: indented, ending in a newline.
func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
