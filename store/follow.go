package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// followRound bounds one background Sync, so that a log that stays down is
// reported, and the receipts signed meanwhile are looked at, every so often.
const followRound = time.Minute

// Follower submits a store's new receipts to its log in the background, in
// one goroutine: a Sync every interval, and one right after Wake, never two
// at once. Its methods are safe for concurrent use.
type Follower struct {
	s      *Store
	opts   SyncOptions
	every  time.Duration
	log    *slog.Logger
	wake   chan struct{} // a pending wake-up, at most one
	cancel context.CancelFunc
	done   chan struct{}
}

// Follow starts a goroutine that runs Sync(opts) every interval and after
// each Wake, until ctx ends or Shutdown is called. A round is skipped when
// another process holds the sync lock (that run submits the same receipts);
// a failing round is retried at the next tick. Failures are logged through
// logger once per change of state (failing, failing differently, working
// again); nil discards. Rounds stop at the first of ctx's end and Shutdown.
func (s *Store) Follow(ctx context.Context, every time.Duration, opts SyncOptions, logger *slog.Logger) *Follower {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Follower{s: s, opts: opts, every: every, log: logger, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// Wake asks for a round now (or right after the running one): a caller
// calls it after signing a receipt, so that the receipt reaches the log
// within the log's publish interval rather than the Follower's. It never
// blocks.
func (f *Follower) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Shutdown stops the rounds (a running one is abandoned; nothing is lost,
// its receipts are still pending) and runs one last Sync bounded by ctx,
// waiting for the sync lock if another process holds it. It returns an error
// when receipts remain pending or were rejected. Call it once.
func (f *Follower) Shutdown(ctx context.Context) error {
	f.cancel()
	<-f.done
	res, err := f.s.Sync(ctx, f.opts)
	return syncErr(res, err)
}

func (f *Follower) run(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(f.every)
	defer t.Stop()
	var state string // the last failure logged, "" when working
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.wake:
		}
		if f.s.Syncing() {
			continue // another run holds the lock and submits them
		}
		rctx, cancel := context.WithTimeout(ctx, followRound)
		res, err := f.s.Sync(rctx, f.opts)
		cancel()
		if ctx.Err() != nil {
			return // stopped mid-round: not a failure of the log
		}
		switch key := failure(res, err); {
		case key != "" && key != state:
			state = key
			f.log.Warn("store: submitting receipts to the log fails; they stay pending and are retried",
				"err", syncErr(res, err), "pending", res.Pending)
		case key == "" && state != "":
			state = ""
			f.log.Info("store: submitting receipts to the log works again")
		}
	}
}

// syncErr is the error of a Sync that did not leave every receipt proven.
func syncErr(res SyncResult, err error) error {
	if res.Pending > 0 || len(res.Errors) > 0 {
		err = errors.Join(append([]error{err, fmt.Errorf("%d receipts still pending", res.Pending)}, res.Errors...)...)
	}
	return err
}

// failure names what went wrong in a Sync, the same however many receipts
// it concerned, or "" when nothing did.
func failure(res SyncResult, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case len(res.Errors) > 0:
		if cause := errors.Unwrap(res.Errors[0]); cause != nil {
			return "rejected: " + cause.Error()
		}
		return "rejected"
	case res.Pending > 0:
		return "pending"
	}
	return ""
}
