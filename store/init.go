package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/receipts"
)

// The project's .docket layout, as `docket init` sets it up: this file owns
// it, so that the commands ask the store for what they need (Init,
// PolicyFiles, WritePolicyFile, WitnessPolicy, ProofVerifier) instead of
// building paths into it.

// GitignoreLines are the .docket paths that stay out of version control:
// the key and the local receipt state.
var GitignoreLines = []string{
	"/.docket/issuer.key", "/.docket/sessions/", "/.docket/proofs/", "/.docket/spool/", "/.docket/journal/",
	"/.docket/" + IssuerJournalFile, "/.docket/" + IssuerLockFile, "/.docket/" + policyValidatedFile,
	"/.docket/" + SyncLockFile, "/.docket/" + SyncLogFile, "/.docket/" + cursorFile, "/.docket/" + AppendsFile,
	"/.docket/" + proofsCheckedFile, "/.docket/hookd.sock", "/.docket/hookd.lock", // the gate daemon's (internal/hookd)
}

// InitKey makes sure the project has an issuer key: it loads the existing
// one (refusing a key others can read) or generates and writes a new one.
// It returns the key's kid and whether it was created.
func (s *Store) InitKey() (kid string, created bool, err error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", false, err
	}
	if s.HasKey() {
		priv, err := s.Key()
		if err != nil {
			return "", false, fmt.Errorf("existing issuer key: %w", err)
		}
		return receipts.NewKeyFile(priv).KID, false, nil
	}
	_, kf := receipts.GenerateKey()
	if err := s.WriteKey(kf); err != nil {
		return "", false, fmt.Errorf("writing issuer key: %w", err)
	}
	return kf.KID, true, nil
}

// PolicyFile is one *.cedar file of the project's policy.
type PolicyFile struct {
	Name string
	Data []byte
}

// PolicyFiles returns the regular files directly in the project's policy
// directory (its *.cedar files and whatever else the user keeps there), in
// name order; none when there is no policy directory.
func (s *Store) PolicyFiles() ([]PolicyFile, error) {
	ents, err := os.ReadDir(s.PolicyDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the policy directory: %w", err)
	}
	var files []PolicyFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.PolicyDir(), e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, PolicyFile{Name: e.Name(), Data: b})
	}
	return files, nil
}

// HasPolicy reports whether the project's policy directory holds a *.cedar
// file.
func (s *Store) HasPolicy() bool {
	files, _ := filepath.Glob(filepath.Join(s.PolicyDir(), "*.cedar"))
	return len(files) > 0
}

// ReadPolicyFile returns one file of the project's policy directory.
func (s *Store) ReadPolicyFile(name string) ([]byte, error) {
	if !safeName(name) {
		return nil, fmt.Errorf("policy file name %q", name)
	}
	return os.ReadFile(filepath.Join(s.PolicyDir(), name))
}

// WritePolicyFile writes one file of the project's policy directory
// durably, creating the directory, and returns the path it wrote (to name
// it to the user).
func (s *Store) WritePolicyFile(name string, data []byte) (string, error) {
	if !safeName(name) {
		return "", fmt.Errorf("policy file name %q", name)
	}
	if err := os.MkdirAll(s.PolicyDir(), 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(s.PolicyDir(), name)
	if err := durable.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("writing policy: %w", err)
	}
	return path, nil
}

// policyValidatedFile records which policy digest was last validated
// against which schema, so that hooks skip re-validating an unchanged
// policy (gate.LoadPolicy).
const policyValidatedFile = "policy.validated"

// PolicyValidated returns what SetPolicyValidated last recorded, or nil.
func (s *Store) PolicyValidated() []byte {
	b, _ := readFileMax(filepath.Join(s.dir, policyValidatedFile), 4<<10)
	return b
}

// SetPolicyValidated records mark (the gate's digest and schema hash).
// It is a cache: failing to write it costs the next load a validation.
func (s *Store) SetPolicyValidated(mark []byte) error {
	return os.WriteFile(filepath.Join(s.dir, policyValidatedFile), mark, 0o600)
}

// InitConfig writes the configuration `docket init -log` gives. A witness
// policy is named by a path relative to the current directory; it must
// exist, and is kept relative to the project when it lies inside it, so
// that the configuration moves with the project.
func (s *Store) InitConfig(c Config) error {
	if c.WitnessPolicy != "" {
		abs, err := filepath.Abs(c.WitnessPolicy)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("witness policy: %w", err)
		}
		if r, err := filepath.Rel(s.project, abs); err == nil && !strings.HasPrefix(r, "..") {
			abs = r
		}
		c.WitnessPolicy = abs
	}
	return s.WriteConfig(c)
}

// WitnessPolicy returns the bytes of the configured witness policy, nil
// when none is configured.
func (s *Store) WitnessPolicy(c Config) ([]byte, error) {
	if c.WitnessPolicy == "" {
		return nil, nil
	}
	b, err := os.ReadFile(c.WitnessPolicyPath(s.project))
	if err != nil {
		return nil, fmt.Errorf("witness policy: %w", err)
	}
	return b, nil
}

// ProofVerifier returns the verifier of the configured log's proofs: its
// key, and the witness quorum of the configured policy.
func (s *Store) ProofVerifier(c Config) (*c2sp.ProofVerifier, error) {
	return c2sp.LoadProofVerifier(c.LogKey, c.WitnessPolicyPath(s.project))
}

// CopySession copies a session's chain, byte for byte up to its last
// complete line, into the store to (a docket export bundle, or a demo's
// copy), with the proofs of its receipts as one .tlog-proof file each
// (writeProofFiles), which third parties read and to.Proofs reads back.
// It returns how many proofs it wrote.
func (s *Store) CopySession(session string, to *Store) (int, error) {
	data, err := os.ReadFile(s.ChainPath(session))
	if err != nil {
		return 0, fmt.Errorf("reading chain: %w", err)
	}
	if i := strings.LastIndexByte(string(data), '\n'); i+1 != len(data) {
		data = data[:i+1]
	}
	dst := to.ChainPath(session)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return 0, err
	}
	proofs, err := s.Proofs(session)
	if err != nil {
		return 0, err
	}
	return writeProofFiles(to.dir, session, proofs, 0o644)
}

// InitGitignore adds the GitignoreLines the project's .gitignore lacks
// (with or without their leading slash), keeping what it holds, and
// returns the lines it added.
func (s *Store) InitGitignore() ([]string, error) {
	path := filepath.Join(s.project, ".gitignore")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range GitignoreLines {
		if !have[l] && !have[strings.TrimPrefix(l, "/")] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# docket: the issuer key and local receipt state\n")
	for _, l := range add {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return add, nil
}
