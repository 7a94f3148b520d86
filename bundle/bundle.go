// Package bundle is the export bundle: the directory an operator hands an
// auditor (`docket export`), which `docket verify` and `docket audit` read
// back as it is. It holds the session chains, one c2sp.org/tlog-proof file
// per logged receipt (<sequence>.tlog-proof, the spec's SHOULD, so third
// parties need no Docket to read them), the issuer's JWKS, the policy
// files, the witness policy, and a manifest (docket-bundle.json) naming
// the log and those files.
//
// It is a package of its own, beside store rather than inside it: a bundle
// is a published format with third-party readers, written once and never
// changed, while a store is one project's private state that hooks append
// to under locks. What they share — where chains and proofs lie — stays
// the store's: Write copies sessions with store's CopySession, and a
// bundle's chains and proofs are read through store.OpenDir's operations
// (Sessions, Receipts, Proofs), so no caller guesses a path.
package bundle

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// ManifestFile is the name of a bundle's manifest, whose presence makes a
// directory a bundle.
const ManifestFile = "docket-bundle.json"

// Names of the files Write puts beside the manifest.
const (
	jwksFile          = "issuers.jwks"
	witnessPolicyFile = "witnesses.policy"
	policyDir         = "policy"
)

// maxManifest bounds the manifest a reader takes from the party being
// audited.
const maxManifest = 64 << 10

// Manifest is a bundle's docket-bundle.json: the log the receipts were
// submitted to, and the files of the bundle a verifier uses when not told
// otherwise.
type Manifest struct {
	LogURL        string `json:"log_url,omitempty"`
	LogKey        string `json:"log_key,omitempty"`
	WitnessPolicy string `json:"witness_policy,omitempty"` // file name in the bundle
	JWKS          string `json:"jwks,omitempty"`           // file name in the bundle
}

// ErrNotBundle is Open's error for a directory without a manifest.
var ErrNotBundle = errors.New("not a docket export bundle (no " + ManifestFile + ")")

// A Bundle is an export bundle opened for reading.
type Bundle struct {
	Manifest
	dir string
}

// Open reads the manifest of the bundle in dir. A directory without one,
// or a path that is no directory, is ErrNotBundle; a manifest that is not strict JSON of the Manifest's
// members, or names a file outside the bundle, is an error.
func Open(ctx context.Context, dir string) (*Bundle, error) {
	name := filepath.Join(dir, ManifestFile)
	data, err := safefile.Read(ctx, name, maxManifest)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotBundle)
	}
	if err != nil {
		return nil, err
	}
	b := &Bundle{dir: dir}
	if err := strictjson.Unmarshal(data, &b.Manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, f := range []string{b.WitnessPolicy, b.JWKS} {
		if f != "" && !filepath.IsLocal(f) {
			return nil, fmt.Errorf("%s: file %q is outside the bundle", name, f)
		}
	}
	return b, nil
}

// Dir returns the bundle's directory.
func (b *Bundle) Dir() string { return b.dir }

// WitnessPolicyFile returns the path of the bundle's witness policy, ""
// when it has none.
func (b *Bundle) WitnessPolicyFile() string { return b.file(b.WitnessPolicy) }

// JWKSFile returns the path of the bundle's issuer keys, "" when it has
// none.
func (b *Bundle) JWKSFile() string { return b.file(b.JWKS) }

func (b *Bundle) file(name string) string {
	if name == "" {
		return ""
	}
	return filepath.Join(b.dir, name)
}

// Store returns the bundle's chains and proofs, read through the store's
// operations (Sessions, Receipts, Proofs, ChainPath).
func (b *Bundle) Store() *store.Store { return store.OpenDir(b.dir) }

// ChainFiles returns the paths of the bundle's session chains, one .jsonl
// file each, in session order; an error when it has none.
func (b *Bundle) ChainFiles() ([]string, error) {
	st := b.Store()
	names, err := st.Sessions()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: a bundle without session chains", b.dir)
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = st.ChainPath(n)
	}
	return paths, nil
}

// Write writes the bundle of the store st into dir, which must not exist
// yet: the chains of the sessions whose id is in sessions (all of them when
// sessions is empty) with their proofs, the issuer's JWKS (when the key
// loads), the witness policy and the policy files, and the manifest last.
// It returns how many sessions it wrote.
func Write(st *store.Store, dir string, sessions []string) (int, error) {
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
		if len(sessions) > 0 {
			rs, err := st.Receipts(name)
			if err != nil {
				return 0, err
			}
			if !selected(rs, sessions) {
				continue
			}
		}
		n++
		if _, err := st.CopySession(name, out); err != nil {
			return 0, err
		}
	}
	m := Manifest{LogURL: cfg.LogURL, LogKey: cfg.LogKey}
	if key, err := st.Key(); err == nil {
		j, err := jsonIndent(map[string]any{"keys": []any{receipts.JWK(key.Public().(ed25519.PublicKey))}})
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, jwksFile), j, 0o644); err != nil {
			return 0, err
		}
		m.JWKS = jwksFile
	}
	wp, err := st.WitnessPolicy(cfg)
	if err != nil {
		return 0, err
	}
	if wp != nil {
		if err := os.WriteFile(filepath.Join(dir, witnessPolicyFile), wp, 0o644); err != nil {
			return 0, err
		}
		m.WitnessPolicy = witnessPolicyFile
	}
	files, err := st.PolicyFiles()
	if err != nil {
		return 0, err
	}
	if len(files) > 0 {
		if err := os.Mkdir(filepath.Join(dir, policyDir), 0o755); err != nil {
			return 0, err
		}
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, policyDir, f.Name), f.Data, 0o644); err != nil {
			return 0, err
		}
	}
	j, err := jsonIndent(m)
	if err != nil {
		return 0, err
	}
	return n, os.WriteFile(filepath.Join(dir, ManifestFile), j, 0o644)
}

// selected reports whether the chain rs is of one of the sessions.
func selected(rs [][]byte, sessions []string) bool {
	if len(rs) == 0 {
		return false
	}
	r, err := receipts.Open(rs[0], nil)
	if err != nil {
		return false
	}
	for _, s := range sessions {
		if s == r.Payload.SessionID {
			return true
		}
	}
	return false
}

// jsonIndent is a bundle file's JSON: indented, ending in a newline.
func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
