// Package explorer serves a read-only web site over a Docket log for
// auditors: the latest checkpoint with its witnesses, every entry with a
// headline, its receipt and a recomputed inclusion proof, a page per issuer
// and per session (the chain's verdict), search and filters, charts of
// decisions drawn on the server, downloads (entries, tlog-proofs, JSONL),
// and each issuer's verifiable index (package audit's IssuerIndexProof, in
// pages), which `docket verify-index` checks offline with the log key alone.
//
// The explorer follows the log in the background, under its own context
// and never a request's: it reads the log through the tlog-tiles API like
// any client, verifies every entry (strict form, kid, Ed25519 signature) on
// every core, and commits them to its own SQLite index a chunk at a time,
// each chunk once a consistency proof shows the entries read so far to be a
// prefix of the tree the log signed. Pages answer at once from what is
// verified and say how far verification has got; a restart reads only what
// is new. A page is served with 200 only when what it shows verified and
// the latest refresh did; otherwise with a 5xx and the reason, without the
// storage paths or URLs behind it.
//
// Pages are server-rendered HTML without script under the Content Security
// Policy default-src 'none' (the stylesheet is a same-origin route); charts
// are inline SVG.
package explorer

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/logclient"
)

// A Fetcher reads a log's tlog-tiles resources within the bounds of
// tlog-tiles (logclient.Client and audit's fetchers are Fetchers).
// ReadEntryBundle with p > 0 asks for a partial bundle of p entries, and
// may return the full bundle once the partial one is gone.
type Fetcher interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// Config configures an Explorer.
type Config struct {
	// Fetcher reads the log; Verifier checks its checkpoints (log key and,
	// with a policy, the witness quorum).
	Fetcher  Fetcher
	Verifier *c2sp.ProofVerifier
	// Index is the path of the explorer's SQLite index, kept across
	// restarts. "" keeps it in a temporary directory removed by Close.
	Index string
	// Refresh is how often the explorer looks for a new checkpoint, at most
	// (default one second).
	Refresh time.Duration
	// MaxFetches is how many requests may read the log at once (entry pages
	// and downloads; default 4); the others wait their turn, as long as
	// their client does.
	MaxFetches int
	Logger     *slog.Logger
}

// An Explorer is the http.Handler of the explorer site, and the follower
// that keeps its index. It is safe for concurrent use.
type Explorer struct {
	cfg     Config
	idx     *index
	tmpDir  string
	mux     *http.ServeMux
	fetches chan struct{} // a token per request reading the log
	kick    chan struct{} // asks the follower for a cycle now
	stop    context.CancelFunc
	stopped chan struct{} // closed when the follower returns

	// view is what pages show: the verified prefix of the log.
	view atomic.Pointer[view]

	// mu guards started, done, cycleDone and status: the follower's cycles
	// started and done, a channel closed at the end of each, and the
	// outcome of the latest.
	mu        sync.Mutex
	started   uint64
	done      uint64
	cycleDone chan struct{}
	status    *status

	// summaries and verdicts cache issuer summaries and session verdicts
	// of the latest verified size.
	summaries sizeCache[int64, issuerSummary]
	tallies   tallies
	verdicts  sizeCache[int64, sessionInfo]

	// verified counts the entries this process verified: a restart over
	// an index verifies only the entries that are new (see /health).
	verified atomic.Uint64
}

// A sizeCache holds what pages computed from the verified prefix of one
// size, at most cacheSize values: a larger size, or a full cache, empties
// it. It is safe for concurrent use.
type sizeCache[K comparable, V any] struct {
	mu   sync.Mutex // guards size and m
	size uint64
	m    map[K]V
}

const cacheSize = 4096

func (c *sizeCache[K, V]) get(size uint64, k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok && c.size == size
}

func (c *sizeCache[K, V]) put(size uint64, k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case size < c.size:
		return
	case size > c.size || len(c.m) >= cacheSize:
		c.size, c.m = size, map[K]V{}
	}
	c.m[k] = v
}

// A view is the verified prefix [0, size) of the log, consistent with the
// signed checkpoint cp (nil before the first), and its compact range. target
// is the size of the newest checkpoint, which the follower is verifying up
// to. A view is never modified.
type view struct {
	size   uint64
	hashes [][]byte
	cp     []byte
	cpInfo *c2sp.Checkpoint
	target uint64
}

// status is the outcome of a follower's cycle: err, and what a page may
// say of it.
type status struct {
	err    error
	public string
}

// New returns an explorer of the log cfg describes, opening (or creating)
// its index, and starts following the log under ctx: the follower stops
// when ctx is done or Close is called.
func New(ctx context.Context, cfg Config) (*Explorer, error) {
	if cfg.Fetcher == nil || cfg.Verifier == nil {
		return nil, fmt.Errorf("explorer: Fetcher and Verifier are required")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.MaxFetches <= 0 {
		cfg.MaxFetches = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Explorer{cfg: cfg, mux: http.NewServeMux(), fetches: make(chan struct{}, cfg.MaxFetches),
		kick: make(chan struct{}, 1), stopped: make(chan struct{}), cycleDone: make(chan struct{})}
	path := cfg.Index
	if path == "" {
		dir, err := os.MkdirTemp("", "docket-explorer-")
		if err != nil {
			return nil, fmt.Errorf("explorer: %w", err)
		}
		e.tmpDir, path = dir, filepath.Join(dir, "index.db")
	}
	idx, err := openIndex(ctx, path)
	if err != nil {
		e.removeTemp()
		return nil, fmt.Errorf("explorer: %w", err)
	}
	e.idx = idx
	st, err := idx.state(ctx)
	if err == nil {
		err = e.restore(st)
	}
	if err != nil {
		idx.db.Close()
		e.removeTemp()
		return nil, fmt.Errorf("explorer: %w", err)
	}
	e.routes()
	ctx, e.stop = context.WithCancel(ctx)
	go e.follow(ctx)
	return e, nil
}

// restore makes the index's stored state the first view.
func (e *Explorer) restore(st *state) error {
	v := &view{size: st.size, hashes: st.hashes, cp: st.cp}
	if st.cp != nil {
		cp, err := checkpointFrom(e.cfg.Verifier, st.cp)
		if err != nil {
			return fmt.Errorf("the index's checkpoint is not the log's: %w", err)
		}
		if cp.Size < st.size {
			return fmt.Errorf("the index holds %d entries of a checkpoint of size %d", st.size, cp.Size)
		}
		v.cpInfo, v.target = cp, cp.Size
	}
	if _, err := audit.RestoreRange(v.size, v.hashes); err != nil {
		return fmt.Errorf("the index's compact range: %w", err)
	}
	e.view.Store(v)
	return nil
}

func (e *Explorer) removeTemp() {
	if e.tmpDir != "" {
		os.RemoveAll(e.tmpDir)
	}
}

// Close stops the follower, waits for it and closes the index.
func (e *Explorer) Close() error {
	e.stop()
	<-e.stopped
	err := e.idx.db.Close()
	e.removeTemp()
	return err
}

// publish makes v what pages show.
func (e *Explorer) publish(v *view) { e.view.Store(v) }

// Refresh asks the follower for a cycle that starts after the call, waits
// for it (or for ctx) and returns its error.
func (e *Explorer) Refresh(ctx context.Context) error {
	e.mu.Lock()
	target := e.started + 1
	e.mu.Unlock()
	select {
	case e.kick <- struct{}{}:
	default:
	}
	for {
		e.mu.Lock()
		done, ch, st := e.done, e.cycleDone, e.status
		e.mu.Unlock()
		if done >= target {
			return st.err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.stopped:
			return errors.New("explorer: stopped")
		}
		// A cycle that was running at the call may have ended: ask again.
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// current returns the view and the latest cycle's status (nil before the
// first cycle ends).
func (e *Explorer) current() (*view, *status) {
	e.mu.Lock()
	st := e.status
	e.mu.Unlock()
	return e.view.Load(), st
}

// A refreshError is a refresh's error with what a page may say of it.
type refreshError struct {
	public string
	err    error
}

func (r *refreshError) Error() string { return r.public + ": " + r.err.Error() }
func (r *refreshError) Unwrap() error { return r.err }

// publicError is what a page says of err: why the log could not be read or
// verified, never a storage path or URL. The log records the rest.
func publicError(err error) string {
	var re *refreshError
	var rm *audit.RootMismatchError
	switch {
	case errors.As(err, &rm):
		return "the log's entries do not hash to the root of its signed checkpoint: " + rm.Error()
	case errors.Is(err, audit.ErrOversized), errors.Is(err, logclient.ErrTooLarge):
		return "the log served a tile or entry bundle larger than tlog-tiles allows"
	case errors.As(err, &re):
		if errors.Is(re.err, audit.ErrOversized) || errors.Is(re.err, logclient.ErrTooLarge) {
			return re.public + ": the log served a tile or entry bundle larger than tlog-tiles allows"
		}
		return re.public
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "reading the log took too long"
	}
	return "the log could not be read"
}
