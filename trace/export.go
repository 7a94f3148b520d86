package trace

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// The files Export writes, which verification looks for next to the
// record.
const (
	RecordFile     = "trust-record.json"
	TranscriptFile = "transcript.json"
	ChainFile      = "chain.jsonl"
	ProofFile      = "last.tlog-proof"
)

// ErrAppraisal wraps Export's error when docket audit, run for the
// record's appraisal, could not complete.
var ErrAppraisal = errors.New("docket audit")

// ExportConfig says what Export writes.
type ExportConfig struct {
	// Store is the project's store; Session the agent's session id.
	Store   *store.Store
	Session string
	// Dir is where the record goes; it must not exist.
	Dir string
	// TranscriptURI is where transcript.json will be published; empty
	// means its file:// URI.
	TranscriptURI string
	// Subject and DataClass are Config's.
	Subject, DataClass string
	// Measurement is "sha256:" + hex of the exporting binary
	// (BinaryDigest).
	Measurement string
	// Log, when set, reads the store's configured log back: docket audit
	// runs over the session against it, and its result is the record's
	// appraisal (status none without it).
	Log audit.Fetcher
	// Logger receives the warnings (audit findings, no proof yet); nil
	// discards them.
	Logger *slog.Logger
}

// Export writes the TRACE Trust Record of one session of a store into a
// new directory: the signed record, the transcript, the chain, the log
// proof of the chain's last receipt (when synced), and the audit's
// evidence files (when it found anything). On error the directory is
// removed.
func Export(ctx context.Context, cfg ExportConfig) (_ *Record, err error) {
	st := cfg.Store
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	chain, err := st.Receipts(cfg.Session)
	if err != nil {
		return nil, err
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("no session %q in the store", cfg.Session)
	}
	s, err := ReadSession(chain)
	if err != nil {
		return nil, err
	}
	key, err := st.Key()
	if err != nil {
		return nil, err
	}
	transcript, err := MarshalTranscript(s.Calls)
	if err != nil {
		return nil, err
	}
	rc := Config{Key: key, Session: s, Transcript: transcript, TranscriptURI: cfg.TranscriptURI,
		Subject: cfg.Subject, DataClass: cfg.DataClass, Measurement: cfg.Measurement}
	if len(s.PolicyDigests) == 0 {
		eng, err := gate.LoadPolicy(st)
		if err != nil {
			return nil, fmt.Errorf("the session made no decision and the policy does not load: %w", err)
		}
		rc.PolicyDigest = eng.Digest()
	}
	if err := os.Mkdir(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(cfg.Dir)
		}
	}()
	if cfg.Log != nil {
		evidence := filepath.Join(cfg.Dir, "evidence")
		if rc.Appraisal, err = appraise(ctx, st, cfg.Log, key.Public().(ed25519.PublicKey), chain, s.ID, evidence, logger); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrAppraisal, err)
		}
		os.Remove(evidence) // only if empty
	}
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if rc.TranscriptURI == "" {
		rc.TranscriptURI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(abs, TranscriptFile))}).String()
	}
	if proof, err := st.ReadProof(s.ID, s.LastSequence); err == nil {
		base, err := url.Parse(rc.TranscriptURI)
		if err != nil {
			return nil, fmt.Errorf("transcript URI: %w", err)
		}
		rc.Transparency = base.ResolveReference(&url.URL{Path: ProofFile}).String()
		if err := os.WriteFile(filepath.Join(cfg.Dir, ProofFile), proof, 0o644); err != nil {
			return nil, err
		}
	} else {
		logger.Warn(fmt.Sprintf("receipt %d of session %s has no log proof yet: the record names none (run docket sync first)", s.LastSequence, cfg.Session))
	}
	rec, err := New(rc)
	if err != nil {
		return nil, err
	}
	signed, err := Sign(rec, key)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{
		{TranscriptFile, transcript},
		{ChainFile, append(bytes.Join(chain, []byte("\n")), '\n')},
		{RecordFile, signed},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(cfg.Dir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// appraise runs docket audit over the session (its chain and the whole
// log, its checkpoint verified against the store's configured log key and
// witness policy) and returns its appraisal.
func appraise(ctx context.Context, st *store.Store, f audit.Fetcher, pub ed25519.PublicKey, chain [][]byte, session, evidence string, logger *slog.Logger) (*Appraisal, error) {
	cfg, err := st.Config()
	if err != nil {
		return nil, err
	}
	if !cfg.HasLog() {
		return nil, errors.New("no log configured")
	}
	v, err := st.ProofVerifier(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := f.ReadCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the log's checkpoint: %w", err)
	}
	cp, err := v.VerifyCheckpoint(raw)
	if err != nil {
		return nil, fmt.Errorf("the log's checkpoint: %w", err)
	}
	findings, err := audit.Run(ctx, audit.Config{Fetcher: f, Checkpoint: raw, Size: cp.Size, Root: cp.Root,
		Keys: receipts.PinnedKey(pub), Sessions: []string{session}, EvidenceDir: evidence},
		[]audit.Chain{{Source: st.ChainPath(session), Receipts: chain}})
	if err != nil {
		return nil, err
	}
	for _, fd := range findings {
		logger.Warn(fmt.Sprintf("audit: %s", fd))
	}
	return Appraise(findings, time.Now()), nil
}

// BinaryDigest returns "sha256:" + hex of the running binary: a record's
// software-only measurement.
func BinaryDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
