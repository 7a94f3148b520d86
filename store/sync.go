package store

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/logclient"
	"github.com/docketlog/docket/receipts"
)

// SyncLockFile is the lock that serializes `docket sync` runs in a store.
const SyncLockFile = "sync.lock"

// Errors of Sync.
var (
	// ErrNoLog: the project has no log configured.
	ErrNoLog = errors.New("no log configured (docket init -log URL -log-key VKEY)")
	// ErrRejected: the log refused a receipt for good (4xx); retrying the
	// same receipt cannot succeed. It is logclient.ErrRejected.
	ErrRejected = logclient.ErrRejected
	// ErrSyncBusy: another Sync held the store's sync lock until the
	// context ended; it is delivering the same receipts.
	ErrSyncBusy = errors.New("another docket sync holds the lock")
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
	// CheckpointEvery is how often, at most, Sync logs an issuer checkpoint
	// (an issuer_checkpoint receipt: the issuer_sequence up to which every
	// receipt is in the log, and the open sessions) once everything else is
	// logged, when receipts were signed since the last one. Zero: every
	// Sync that finds new receipts. Negative: never.
	CheckpointEvery time.Duration
	// Rescan makes Sync read every chain and every proof instead of
	// starting where the last Sync stopped: for a store whose proofs were
	// removed or restored by hand behind the cursor's back.
	Rescan bool
	// Progress, when set, is called after each batch of proofs is stored
	// with the counts so far.
	Progress func(stored, pending int)
	// FailFast gives up at once when the log refuses connections
	// (logclient.Config.FailFast), leaving the receipts pending.
	FailFast bool
	// Proven, when set, is called after each batch of proofs is stored with
	// the receipts they prove (docket sync's OpenTelemetry export). It is
	// called from one goroutine at a time and must not block for long.
	Proven func([]ProvenReceipt)
	// Done, when set, is called with Sync's outcome while Sync still holds
	// the sync lock: what it records (docket sync's sync log) is written
	// before another run starts and before a waiter on the lock sees this
	// one end. It is not called when Sync fails before taking the lock.
	Done func(SyncResult, error)
}

// SyncResult counts what one Sync did.
type SyncResult struct {
	// Stored is the number of proofs verified and stored.
	Stored int
	// Pending is the number of receipts still without a proof.
	Pending int
	// Errors are the receipts that failed, with their causes.
	Errors []error
	// Checkpoint is the issuer_high_water of the issuer checkpoint this Sync
	// logged, 0 if none.
	Checkpoint int64
	// Refetched is the number of stored proofs that did not verify (damaged
	// on disk) and were fetched again from the log.
	Refetched int
	// Damaged is the number of stored proofs that did not verify.
	Damaged int
	// LastErr is the error of the last failed attempt at a receipt that
	// is still pending, when the context ended while it was retried: the
	// cause the log kept answering with (connection refused, 503
	// not_published, a proof that does not verify…), or nil.
	LastErr error
}

// A ProvenReceipt is a receipt whose proof Sync verified and stored.
type ProvenReceipt struct {
	Session  string
	Sequence int64
	Receipt  []byte
	// Index is the receipt's leaf index in the log.
	Index uint64
}

// proofBatch is how many proofs Sync stores (and fsyncs) at a time.
const proofBatch = 256

// Sync submits every receipt of the store that has no proof yet to the
// configured log, verifies each proof against the log key (and the witness
// quorum when a policy is configured) and stores it in the session's proof
// journal. Transient failures (network, 5xx, 503 + Retry-After) are retried
// with backoff until ctx ends; rejections (4xx) are not retried. Sync holds
// an exclusive lock so concurrent runs take turns, and it looks again after
// each pass, returning when nothing is pending or nothing more can be done.
//
// Sync starts where the last one stopped (Pending, from the cursor saved in
// the store), so a Sync with nothing to do costs the same however many
// receipts the store holds. The cursor is saved only after the proofs it
// no longer carries are durable, so a Sync killed at any point loses
// nothing: the next one submits again what it cannot be sure of.
func (s *Store) Sync(ctx context.Context, opts SyncOptions) (SyncResult, error) {
	var res SyncResult
	cfg, err := s.Config()
	if err != nil {
		return res, err
	}
	if !cfg.HasLog() {
		return res, ErrNoLog
	}
	key, err := s.Key()
	if err != nil {
		return res, fmt.Errorf("issuer key: %w", err)
	}
	lc, err := s.logClient(cfg, opts)
	if err != nil {
		return res, err
	}

	unlock, err := s.lockSync(ctx)
	if err != nil {
		return res, err
	}
	defer unlock()
	res, err = s.syncLocked(ctx, opts, key, lc)
	if opts.Done != nil {
		opts.Done(res, err)
	}
	return res, err
}

// syncLocked is Sync under the sync lock.
func (s *Store) syncLocked(ctx context.Context, opts SyncOptions, key ed25519.PrivateKey, lc *logclient.Client) (SyncResult, error) {
	var res SyncResult

	// Stored proofs damaged since they were stored are fetched again
	// (the log answers an entry it holds with its index and a new proof).
	pub := key.Public().(ed25519.PublicKey)
	clean, bad, err := s.checkProofs(lc.Verifier(), pub, opts.Rescan)
	if err != nil {
		return res, err
	}
	defer func() { s.recordChecked(clean) }()
	rejected := make(map[Ref]bool) // refused for good in this run
	if res.Damaged = len(bad); len(bad) > 0 {
		// A proof fetched again proves what was proven before: not news.
		refetch := opts
		refetch.Proven = nil
		proven, err := s.deliver(ctx, lc, pub, bad, &res, rejected, refetch)
		res.Refetched = len(proven)
		if err != nil {
			return res, err
		}
	}

	var cur Cursor // the zero Cursor: every chain
	if !opts.Rescan {
		cur = s.loadCursor()
	}
	checkpointed := opts.CheckpointEvery < 0
	for {
		pend, next, err := s.Pending(cur)
		if err != nil {
			return res, err
		}
		var todo []Unproven
		for _, p := range pend {
			if !rejected[p.Ref] {
				todo = append(todo, p)
			}
		}
		res.Pending = len(pend)
		if len(pend) == 0 && !checkpointed {
			checkpointed = true
			// Every receipt up to next's issuer_sequence (read before the
			// chains were) is in the log.
			if res.Checkpoint, err = s.issuerCheckpoint(key, opts.CheckpointEvery, next.IssuerSequence()); err != nil {
				return res, err
			}
			if res.Checkpoint > 0 {
				if err := s.commitCursor(cur, next); err != nil {
					return res, err
				}
				cur = next
				continue // submit it
			}
		}
		if len(todo) == 0 {
			return res, s.commitCursor(cur, next)
		}
		proven, err := s.deliver(ctx, lc, pub, todo, &res, rejected, opts)
		next = next.Proven(proven...)
		if cerr := s.commitCursor(cur, next); err == nil {
			err = cerr
		}
		if err != nil {
			return res, err
		}
		cur = next
	}
}

// commitCursor saves next when it differs from cur, and empties the
// appends journal when its time has come.
func (s *Store) commitCursor(cur, next Cursor) error {
	if next.equal(cur) {
		return nil
	}
	if err := s.saveCursor(next); err != nil {
		return err
	}
	_, err := s.compactAppends(next)
	return err
}

// deliver submits receipts to the log and stores their proofs, and returns
// the receipts whose proofs are stored. It returns an error when ctx ended
// or proofs could not be stored; rejections go into res.
func (s *Store) deliver(ctx context.Context, lc *logclient.Client, pub ed25519.PublicKey, todo []Unproven, res *SyncResult, rejected map[Ref]bool, opts SyncOptions) ([]Ref, error) {
	var (
		mu      sync.Mutex // guards everything below, and res
		proven  []Ref
		batch   []Proof
		refs    []Ref
		told    []ProvenReceipt // what opts.Proven is told of batch
		saveErr error
		refused bool // the log refused connections (FailFast)
	)
	flush := func() {
		if len(batch) == 0 || saveErr != nil {
			return
		}
		if saveErr = s.PutProofs(batch); saveErr == nil {
			proven = append(proven, refs...)
			res.Stored += len(refs)
			res.Pending -= len(refs)
			if opts.Progress != nil {
				opts.Progress(res.Stored, res.Pending)
			}
			if opts.Proven != nil {
				opts.Proven(told)
			}
		}
		batch, refs, told = batch[:0], refs[:0], nil
	}
	fail := func(p Unproven, err error) {
		rejected[p.Ref] = true
		res.Errors = append(res.Errors, fmt.Errorf("session %s receipt %d: %w", p.Session, p.Sequence, err))
	}
	// The journal's entries are durable before their receipts leave.
	sessions := make([]string, 0, len(todo))
	for _, p := range todo {
		sessions = append(sessions, p.Session)
	}
	if err := s.syncJournal(sessions...); err != nil {
		return nil, err
	}
	entries := make([][]byte, 0, len(todo))
	var sent []Unproven
	for _, p := range todo {
		entry, err := receipts.NewEntry(pub, p.Receipt)
		if err != nil {
			fail(p, fmt.Errorf("%w: not signed by the project's issuer key: %w", ErrRejected, err))
			continue
		}
		entries = append(entries, entry)
		sent = append(sent, p)
	}
	err := lc.SubmitBatch(ctx, entries, func(i int, proof *logclient.Proof, err error) {
		mu.Lock()
		defer mu.Unlock()
		p := sent[i]
		switch {
		case err == nil:
			batch = append(batch, Proof{Session: p.Session, Sequence: p.Sequence, Text: proof.Text})
			refs = append(refs, p.Ref)
			if opts.Proven != nil && proof.Verified != nil {
				told = append(told, ProvenReceipt{Session: p.Session, Sequence: p.Sequence, Receipt: p.Receipt, Index: proof.Verified.Index})
			}
			if len(batch) >= proofBatch {
				flush()
			}
		case opts.FailFast && errors.Is(err, syscall.ECONNREFUSED):
			res.LastErr, refused = err, true
		case ctx.Err() != nil:
			// Still pending; not a failure of the receipt. Keep what the
			// attempts before the end failed with.
			if err != ctx.Err() {
				res.LastErr = err
			}
		default:
			fail(p, err)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	flush()
	if saveErr != nil {
		return proven, saveErr
	}
	if err == nil && refused {
		err = fmt.Errorf("the log refuses connections: %w", res.LastErr)
	}
	return proven, err
}

// logClient returns the client of the configured log, verifying proofs
// against its key and the configured witness policy.
func (s *Store) logClient(cfg Config, opts SyncOptions) (*logclient.Client, error) {
	v, err := s.ProofVerifier(cfg)
	if err != nil {
		return nil, err
	}
	ops, err := logclient.NewHTTPOps(cfg.LogURL, opts.HTTPClient, opts.Token)
	if err != nil {
		return nil, err
	}
	return logclient.New(ops, logclient.Config{Verifier: v, Concurrency: opts.Concurrency,
		MinBackoff: opts.MinBackoff, MaxBackoff: opts.MaxBackoff, Logger: opts.Logger, FailFast: opts.FailFast})
}

// Publish submits one receipt of session (at sequence) to the configured
// log now, and returns once its proof is verified (log signature, inclusion,
// the witness quorum with a policy) and stored — the strict mode's wait —
// or ctx ends. It retries transient failures like Sync. It does not take
// the sync lock: a Sync running at the same time may submit the same
// receipt, which the log's strict dedup answers with the same index.
func (s *Store) Publish(ctx context.Context, session string, sequence int64, receipt []byte, opts SyncOptions) error {
	cfg, err := s.Config()
	if err != nil {
		return err
	}
	if !cfg.HasLog() {
		return ErrNoLog
	}
	key, err := s.Key()
	if err != nil {
		return fmt.Errorf("issuer key: %w", err)
	}
	lc, err := s.logClient(cfg, opts)
	if err != nil {
		return err
	}
	entry, err := receipts.NewEntry(key.Public().(ed25519.PublicKey), receipt)
	if err != nil {
		return fmt.Errorf("%w: not signed by the project's issuer key: %w", ErrRejected, err)
	}
	if err := s.syncJournal(session); err != nil {
		return err
	}
	p, err := lc.Add(ctx, entry)
	if err != nil {
		return err
	}
	return s.PutProofs([]Proof{{Session: session, Sequence: sequence, Text: p.Text}})
}

// lockSync takes the store's sync lock, waiting for another run to finish.
func (s *Store) lockSync(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, SyncLockFile), os.O_CREATE|os.O_RDWR, 0o600)
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
			return nil, fmt.Errorf("%w: %w", ErrSyncBusy, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Syncing reports whether a `docket sync` is running in the store (it holds
// the sync lock). It does not wait.
func (s *Store) Syncing() bool {
	f, err := os.Open(filepath.Join(s.dir, SyncLockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	ok, _ := durable.TryRLock(f)
	return !ok
}
