package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/receipts"
)

// SyncLockFile is the lock that serializes `docket sync` runs in a store.
const SyncLockFile = "sync.lock"

// Errors of Sync.
var (
	// ErrNoLog: the project has no log configured.
	ErrNoLog = errors.New("no log configured (docket init -log URL -log-key VKEY)")
	// ErrRejected: the log refused a receipt for good (4xx); retrying the
	// same receipt cannot succeed.
	ErrRejected = errors.New("log rejected the receipt")
)

// SyncOptions tunes Sync. The zero value is usable.
type SyncOptions struct {
	// HTTPClient submits receipts (default: 30s timeout per request).
	HTTPClient *http.Client
	// Token is a bearer token for logs that require one.
	Token string
	// Concurrency bounds receipts in flight (default 8).
	Concurrency int
	// MinBackoff and MaxBackoff bound the retry delay of one receipt
	// (defaults 250ms and 30s); a Retry-After from the log takes precedence.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives one line per failed attempt; nil discards.
	Logger *slog.Logger
	// Receipt, if set, receipts the spooled hook events (see DrainSpool)
	// before anything is submitted, so that they are synced too.
	Receipt func(SpooledEvent) error
	// CheckpointEvery is how often, at most, Sync logs an issuer checkpoint
	// (an issuer_checkpoint receipt: the issuer_sequence up to which every
	// receipt is in the log, and the open sessions) once everything else is
	// logged, when receipts were signed since the last one. Zero: every
	// Sync that finds new receipts. Negative: never.
	CheckpointEvery time.Duration
}

// SyncResult counts what one Sync did.
type SyncResult struct {
	// Stored is the number of proofs verified and stored.
	Stored int
	// Pending is the number of receipts still without a proof.
	Pending int
	// Errors are the receipts that failed, with their causes.
	Errors []error
	// Receipted is the number of spooled events receipted first, and
	// SpoolErr why the others were not (see SyncOptions.Receipt).
	Receipted int
	SpoolErr  error
	// Checkpoint is the issuer_high_water of the issuer checkpoint this Sync
	// logged, 0 if none.
	Checkpoint int64
}

// pendingReceipt is a receipt without a stored proof.
type pendingReceipt struct {
	session  string
	sequence int64
	receipt  []byte
}

// Sync submits every receipt of the store that has no proof yet to the
// configured log, verifies each proof against the log key (and the witness
// quorum when a policy is configured) and stores it atomically next to the
// receipt. Transient failures (network, 5xx, 503 + Retry-After) are retried
// with backoff until ctx ends; rejections (4xx) are not retried. Sync holds
// an exclusive lock so concurrent runs take turns, and it rescans after each
// pass, returning when nothing is pending or nothing more can be done.
func (s *Store) Sync(ctx context.Context, opts SyncOptions) (SyncResult, error) {
	var res SyncResult
	if opts.Receipt != nil {
		res.Receipted, res.SpoolErr = s.DrainSpool(-1, opts.Receipt)
	}
	cfg, err := s.LoadConfig()
	if err != nil {
		return res, err
	}
	if !cfg.HasLog() {
		return res, ErrNoLog
	}
	pv, priv, err := s.logVerifier(cfg)
	if err != nil {
		return res, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	opts.setDefaults()

	unlock, err := s.lockSync(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()

	sub := &submitter{url: strings.TrimRight(cfg.LogURL, "/") + "/add", opts: opts, pv: pv, pub: pub, store: s}
	rejected := make(map[string]bool) // session/sequence refused for good in this run
	checkpointed := opts.CheckpointEvery < 0
	for {
		// Read before the scan: when the scan then finds nothing pending,
		// every receipt up to it is in the log.
		hw, err := s.issuerLast()
		if err != nil {
			return res, err
		}
		pend, err := s.pending()
		if err != nil {
			return res, err
		}
		var todo []pendingReceipt
		for _, p := range pend {
			if !rejected[p.key()] {
				todo = append(todo, p)
			}
		}
		res.Pending = len(pend)
		if len(pend) == 0 && !checkpointed {
			checkpointed = true
			if res.Checkpoint, err = s.issuerCheckpoint(priv, opts.CheckpointEvery, hw); err != nil {
				return res, err
			}
			if res.Checkpoint > 0 {
				continue // submit it
			}
		}
		if len(todo) == 0 {
			return res, nil
		}
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(opts.Concurrency)
		for _, p := range todo {
			g.Go(func() error {
				err := sub.deliver(gctx, p)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					res.Stored++
					res.Pending--
				case ctx.Err() != nil:
					return ctx.Err()
				default:
					rejected[p.key()] = true
					res.Errors = append(res.Errors, fmt.Errorf("session %s receipt %d: %w", p.session, p.sequence, err))
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return res, err
		}
	}
}

func (opts *SyncOptions) setDefaults() {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
}

// logVerifier returns the verifier of the configured log's proofs (with
// the witness quorum of the configured policy) and the issuer key.
func (s *Store) logVerifier(cfg Config) (*c2sp.ProofVerifier, ed25519.PrivateKey, error) {
	var policy []byte
	if p := cfg.WitnessPolicyPath(s.Project); p != "" {
		var err error
		if policy, err = os.ReadFile(p); err != nil {
			return nil, nil, fmt.Errorf("witness policy: %w", err)
		}
	}
	pv, err := c2sp.NewProofVerifier(cfg.LogKey, policy)
	if err != nil {
		return nil, nil, err
	}
	priv, err := receipts.LoadPrivateKey(s.KeyPath())
	if err != nil {
		return nil, nil, fmt.Errorf("issuer key: %w", err)
	}
	return pv, priv, nil
}

// Publish submits one receipt of session (at sequence) to the configured
// log now, and returns once its proof is verified (log signature, inclusion,
// the witness quorum with a policy) and stored — the strict mode's wait —
// or ctx ends. It retries transient failures like Sync. It does not take
// the sync lock: a Sync running at the same time may submit the same
// receipt, which the log's strict dedup answers with the same index.
func (s *Store) Publish(ctx context.Context, session string, sequence int64, receipt []byte, opts SyncOptions) error {
	cfg, err := s.LoadConfig()
	if err != nil {
		return err
	}
	if !cfg.HasLog() {
		return ErrNoLog
	}
	pv, priv, err := s.logVerifier(cfg)
	if err != nil {
		return err
	}
	opts.setDefaults()
	sub := &submitter{url: strings.TrimRight(cfg.LogURL, "/") + "/add", opts: opts, pv: pv, pub: priv.Public().(ed25519.PublicKey), store: s}
	return sub.deliver(ctx, pendingReceipt{session: session, sequence: sequence, receipt: receipt})
}

func (p pendingReceipt) key() string { return p.session + "/" + strconv.FormatInt(p.sequence, 10) }

// pending lists the receipts without a stored proof.
func (s *Store) pending() ([]pendingReceipt, error) {
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	var out []pendingReceipt
	for _, sess := range sessions {
		recs, err := s.Receipts(sess)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			var env struct {
				Payload struct {
					Sequence int64 `json:"sequence"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(r, &env); err != nil || env.Payload.Sequence <= 0 {
				return nil, fmt.Errorf("session %s: receipt without a sequence number", sess)
			}
			if s.hasProof(sess, env.Payload.Sequence) {
				continue
			}
			out = append(out, pendingReceipt{session: sess, sequence: env.Payload.Sequence, receipt: r})
		}
	}
	return out, nil
}

// lockSync takes the store's sync lock, waiting for another run to finish.
func (s *Store) lockSync(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.Dir, SyncLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sync lock: %w", err)
	}
	for {
		ok, err := durable.TryLock(f)
		if ok {
			return func() { f.Close() }, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("sync lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another docket sync: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Syncing reports whether a `docket sync` is running in the store (it holds
// the sync lock). It does not wait.
func (s *Store) Syncing() bool {
	f, err := os.Open(filepath.Join(s.Dir, SyncLockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	ok, _ := durable.TryRLock(f)
	return !ok
}

type submitter struct {
	url   string
	opts  SyncOptions
	pv    *c2sp.ProofVerifier
	pub   ed25519.PublicKey
	store *Store
}

// deliver submits one receipt until the log answers with a proof that
// verifies, which it then stores.
func (sub *submitter) deliver(ctx context.Context, p pendingReceipt) error {
	leaf, err := receipts.NewEntry(sub.pub, p.receipt)
	if err != nil {
		return fmt.Errorf("%w: not signed by the project's issuer key: %w", ErrRejected, err)
	}
	backoff := sub.opts.MinBackoff
	for attempt := 1; ; attempt++ {
		proofText, retryAfter, err := sub.post(ctx, leaf)
		if err == nil {
			if _, err := sub.pv.Verify(leaf, proofText); err != nil {
				// A log that answers with a bad proof is misbehaving or
				// misconfigured; do not store it, do not hammer it.
				return fmt.Errorf("log answered with a proof that does not verify: %w", err)
			}
			return durable.WriteFile(sub.store.ProofPath(p.session, p.sequence), proofText, 0o600)
		}
		if errors.Is(err, ErrRejected) {
			return err
		}
		d := backoff/2 + rand.N(backoff/2+1)
		if retryAfter > d {
			d = retryAfter
		}
		sub.opts.Logger.Info("sync: retrying", "session", p.session, "sequence", p.sequence, "attempt", attempt, "in", d, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(d):
		}
		backoff = min(2*backoff, sub.opts.MaxBackoff)
	}
}

// post submits one entry. It returns the proof, or the delay the log asked
// for and a transient error, or an error wrapping ErrRejected.
func (sub *submitter) post(ctx context.Context, leaf []byte) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.url, bytes.NewReader(leaf))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if sub.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+sub.opts.Token)
	}
	resp, err := sub.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return body, 0, nil
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		var ra time.Duration
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 {
			ra = time.Duration(min(n, 3600)) * time.Second
		}
		return nil, ra, fmt.Errorf("log answered %s: %s", resp.Status, errorMessage(body))
	default:
		return nil, 0, fmt.Errorf("%w: %s: %s", ErrRejected, resp.Status, errorMessage(body))
	}
}

// errorMessage returns the message of a JSON error body, or the body.
func errorMessage(body []byte) string {
	var e struct{ Error, Message string }
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error + ": " + e.Message
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return strings.TrimSpace(string(body))
}
