package logclient

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/docketlog/docket/c2sp"
)

// Config configures a Client. The zero value of every field but Verifier
// picks its default.
type Config struct {
	// Verifier checks every proof and checkpoint against the pinned log
	// key and, when it was built with a policy, the witness quorum
	// (c2sp.LoadProofVerifier). Add, Submit and Checkpoint need it; a
	// Client without one only reads (ReadCheckpoint, ReadTile,
	// ReadEntryBundle), for a caller that verifies what it reads itself.
	Verifier *c2sp.ProofVerifier
	// Concurrency bounds the entries Submit has in flight (default 8).
	Concurrency int
	// MinBackoff and MaxBackoff bound the delay between two attempts of
	// one request (defaults 250ms and 30s). It doubles from MinBackoff,
	// with jitter; a Retry-After from the log takes precedence when longer.
	MinBackoff, MaxBackoff time.Duration
	// ReadAttempts bounds the attempts of one read (default 6); entries
	// are submitted until the context ends.
	ReadAttempts int
	// Logger receives one line per failed attempt; nil discards.
	Logger *slog.Logger
	// FailFast makes a connection the log's host refuses (nothing listens
	// at its address) fail at once instead of being retried: for callers
	// that cannot wait on a log that is down (the strict mode) or that
	// will be started again anyway (the hooks' background syncs).
	FailFast bool
}

// A Client submits entries to one log and reads it back. It is safe for
// concurrent use.
type Client struct {
	ops ClientOps
	cfg Config
}

// New returns a Client that reaches its log through ops.
func New(ops ClientOps, cfg Config) (*Client, error) {
	if ops == nil {
		return nil, errors.New("logclient: no ClientOps")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.MinBackoff)
	}
	if cfg.ReadAttempts <= 0 {
		cfg.ReadAttempts = 6
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{ops: ops, cfg: cfg}, nil
}

// Verifier returns the verifier the Client checks proofs and checkpoints with.
func (c *Client) Verifier() *c2sp.ProofVerifier { return c.cfg.Verifier }

// A Proof is the verified answer to one submitted entry.
type Proof struct {
	// Text is the tlog-proof@v1 as the log sent it.
	Text []byte
	// Verified is what Text proves: the entry's index under a checkpoint
	// signed by the log (and cosigned by the witness quorum, with a policy).
	Verified *c2sp.VerifiedProof
}

// Caps on what the log sends.
const (
	// MaxCheckpointSize bounds a signed checkpoint, with its cosignatures.
	MaxCheckpointSize = 1 << 20
	// MaxProofSize bounds a tlog-proof: a checkpoint and at most 64 hashes.
	MaxProofSize = MaxCheckpointSize + 8<<10
)

// Add submits one entry (DESIGN §3.4: the JCS of {"public_key","receipt"})
// and returns its proof once it verifies. Transient failures are retried
// with backoff until ctx ends; a refusal (ErrRejected) and a proof that
// does not verify (ErrBadProof) are not. The log deduplicates strictly, so
// submitting an entry again is harmless: it is answered with the same index.
func (c *Client) Add(ctx context.Context, entry []byte) (*Proof, error) {
	if c.cfg.Verifier == nil {
		return nil, errNoVerifier
	}
	var text []byte
	err := c.retry(ctx, "add", 0, func() (err error) {
		text, err = c.ops.Add(ctx, entry, MaxProofSize)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.verify(entry, text)
}

// Submit submits a batch of entries, at most Config.Concurrency at a time
// (the log groups concurrent entries into one sequencing batch), each as
// Add does. It calls done exactly once per entry, from several goroutines
// at once, with the entry's position in entries and its proof or error;
// entries not yet started when ctx ends get ctx's error. Submit returns
// once every entry is done, with ctx's error if it ended.
func (c *Client) Submit(ctx context.Context, entries [][]byte, done func(i int, p *Proof, err error)) error {
	var g errgroup.Group
	g.SetLimit(c.cfg.Concurrency)
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			done(i, nil, err)
			continue
		}
		g.Go(func() error {
			p, err := c.Add(ctx, e)
			done(i, p, err)
			return nil
		})
	}
	g.Wait()
	return ctx.Err()
}

var errNoVerifier = errors.New("logclient: no proof verifier configured")

// retry calls f until it succeeds, fails for good, attempts run out
// (0: unbounded) or ctx ends, waiting between attempts.
func (c *Client) retry(ctx context.Context, what string, attempts int, f func() error) error {
	backoff := c.cfg.MinBackoff
	var last error // of the previous attempt
	for attempt := 1; ; attempt++ {
		err := f()
		if err != nil && ctx.Err() != nil {
			// Say why the attempts before the end failed, too.
			if !errors.Is(err, ctx.Err()) {
				last = err
			}
			if last == nil {
				return err
			}
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
		}
		if err == nil || !temporary(err) || attempts > 0 && attempt >= attempts ||
			c.cfg.FailFast && errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		last = err
		d := backoff/2 + rand.N(backoff/2+1)
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > d {
			d = se.RetryAfter
		}
		c.cfg.Logger.Info("log: retrying", "request", what, "attempt", attempt, "in", d, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-time.After(d):
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// temporary reports whether a failed request may succeed if tried again:
// network errors (a request's own timeout among them), 429 and 5xx; not
// refusals, oversized or malformed answers, missing resources or bad
// proofs. The caller's context ending is checked apart.
func temporary(err error) bool {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		return se.Temporary()
	case errors.Is(err, ErrRejected), errors.Is(err, ErrTooLarge), errors.Is(err, ErrMalformed),
		errors.Is(err, ErrBadProof), errors.Is(err, fs.ErrNotExist):
		return false
	}
	return true
}
