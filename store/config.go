package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/internal/durable"
)

// Config is the client configuration kept in .docket/config.json, written
// by `docket init -log URL -log-key VKEY [-witness-policy FILE]`. The zero
// Config (no file) is valid: receipts are kept locally and nothing is
// submitted.
type Config struct {
	// LogURL is the docket-log base URL (http or https); receipts are
	// submitted to LogURL + "/add" and tiles read below it. Empty: no log.
	LogURL string `json:"log_url,omitempty"`
	// LogKey is the log's checkpoint verifier key, a
	// golang.org/x/mod/sumdb/note vkey (name+hex8+base64). Required with LogURL.
	LogKey string `json:"log_key,omitempty"`
	// WitnessPolicy is the path of a C2SP tlog-policy file naming the
	// witnesses and quorum proofs must satisfy. A relative path is relative
	// to the project root. Optional.
	WitnessPolicy string `json:"witness_policy,omitempty"`
	// RequireLog turns on the strict mode (DESIGN §6, docket init
	// -require-log): the pre hook answers allow only once the allow
	// decision is in the log with its proof verified (and the witness
	// quorum, with a policy); otherwise the call is denied (log_unavailable).
	RequireLog bool `json:"require_log,omitempty"`
	// Observe turns on observe mode (docket init -observe): every call is
	// decided and signed as usual, but a policy's deny or ask is answered
	// as an allow and its receipt says so ("enforced": false). A gate
	// error is still enforced (package gate).
	Observe bool `json:"observe,omitempty"`
	// Journal turns on the local journal (docket init -journal): the
	// exact tool input of each decided call, kept in .docket/journal
	// (mode 0600) by its receipt's hash and never submitted.
	Journal bool `json:"journal,omitempty"`
	// Confine (docket init -confine) requires every shell command to run
	// under the confinement derived from the policy (package confine):
	// the Claude Code pre hook rewrites an allowed Bash call to run under
	// docket exec, and denies it when this machine cannot confine it.
	Confine bool `json:"confine,omitempty"`
	// InputCommitment is how receipts commit to each call's input
	// (docket init -commit-inputs): "" for tool_input_hash, the unsalted
	// SHA-256 of JCS(tool_input) that anyone can check a guess against;
	// CommitSalted for tool_input_commitment, salted per call with the salt
	// kept in the journal only (it needs Journal). docs/audit.md says what
	// each reveals.
	InputCommitment string `json:"tool_input_commitment,omitempty"`
}

// CommitSalted is Config.InputCommitment's salted commitments.
const CommitSalted = "salted"

// Validate checks that the configuration is usable: a well-formed log URL
// with a parseable log vkey whenever either is set.
func (c Config) Validate() error {
	switch {
	case c.InputCommitment != "" && c.InputCommitment != CommitSalted:
		return fmt.Errorf("config: tool_input_commitment %q: want %q or none", c.InputCommitment, CommitSalted)
	case c.InputCommitment == CommitSalted && !c.Journal:
		return errors.New("config: salted tool_input_commitment needs the journal (journal: true), which keeps the salts")
	}
	if c.RequireLog && c.LogURL == "" {
		return errors.New("config: require_log is set but log_url is not")
	}
	if c.LogURL == "" && c.LogKey == "" {
		if c.WitnessPolicy != "" {
			return errors.New("config: witness_policy is set but log_url is not")
		}
		return nil
	}
	if c.LogURL == "" {
		return errors.New("config: log_key is set but log_url is not")
	}
	u, err := url.Parse(c.LogURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("config: log_url %q is not an http or https URL", c.LogURL)
	}
	if c.LogKey == "" {
		return errors.New("config: log_url is set but log_key is not")
	}
	if _, err := note.NewVerifier(c.LogKey); err != nil {
		return fmt.Errorf("config: log_key: %w", err)
	}
	return nil
}

// HasLog reports whether a log is configured.
func (c Config) HasLog() bool { return c.LogURL != "" }

// WitnessPolicyPath returns the witness policy path resolved against the
// project root, or "" when none is configured.
func (c Config) WitnessPolicyPath(project string) string {
	if c.WitnessPolicy == "" || filepath.IsAbs(c.WitnessPolicy) {
		return c.WitnessPolicy
	}
	return filepath.Join(project, c.WitnessPolicy)
}

// LoadConfig is Config, under the name callers are moving away from.
func (s *Store) LoadConfig() (Config, error) { return s.Config() }

// Config reads and validates the store's config.json. A missing file is
// the zero Config.
func (s *Store) Config() (Config, error) {
	data, err := os.ReadFile(s.configPath())
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", s.configPath(), err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", s.configPath(), err)
	}
	return c, nil
}

// WriteConfig validates c and writes it to the store's config.json,
// replacing any previous configuration atomically.
func (s *Store) WriteConfig(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(s.configPath(), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing config: %w", err)
	}
	return nil
}

func (s *Store) configPath() string { return filepath.Join(s.dir, ConfigFile) }
