package log

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Health describes the log's state as GET /health reports it.
type Health struct {
	Status string `json:"status"`
	Origin string `json:"origin"`
	Size   uint64 `json:"size"`
	// CheckpointAgeMs is how long ago the log first read the published
	// checkpoint it holds.
	CheckpointAgeMs int64  `json:"checkpoint_age_ms"`
	Indexed         uint64 `json:"indexed"`
	InFlight        int    `json:"in_flight"`
}

// Errors of Health besides ErrNotWritable, each with the error code of
// the 503 answer to GET /health.
var (
	// errUnservable: the published checkpoint cannot be read from storage,
	// or does not verify.
	errUnservable = errors.New("the log cannot serve its checkpoint")
	// errStale: the published checkpoint is older than MaxCheckpointAge.
	errStale = errors.New("the published checkpoint is stale")
)

// Kinds of storage writes whose failures Health reports.
const (
	writeSequencing = "sequencing"
	writeIndexing   = "indexing"
	writeProbe      = "probe"
)

// probeTimeout bounds one run of Config.Probe, and probeFreshness is how
// old the write may be that its answer reflects. unprobedHold is how long a
// failed append counts when there is no probe to tell when writes succeed
// again: with /health failing, a load balancer sends no write that could.
const (
	probeTimeout   = 2 * time.Second
	probeFreshness = time.Second
	unprobedHold   = 10 * time.Second
)

// writes records the log's failed writes to storage for Health. Its
// methods are safe for concurrent use.
type writes struct {
	logger *slog.Logger

	// failedMu guards failed: the latest failure of each kind of write
	// since the last success of that kind.
	failedMu sync.Mutex
	failed   map[string]writeFailure
}

type writeFailure struct {
	err error
	at  time.Time
}

// record notes the outcome of a write of a kind. A success of the probe
// also ends a failure of sequencing that is older than probeFreshness (so
// that the probe wrote after it), since sequencing cannot retry by itself
// while /health keeps writers away.
func (w *writes) record(kind string, err error) {
	w.failedMu.Lock()
	defer w.failedMu.Unlock()
	if err != nil {
		if _, ok := w.failed[kind]; !ok {
			w.logger.Error("storage write failed: /health reports the log as not writable", "write", kind, "err", err)
		}
		w.failed[kind] = writeFailure{err, time.Now()}
		return
	}
	for k, f := range w.failed {
		if k == kind || kind == writeProbe && k == writeSequencing && time.Since(f.at) > probeFreshness {
			delete(w.failed, k)
			w.logger.Info("storage writes succeed again", "write", k)
		}
	}
}

// failure returns the standing write failure, if any.
func (w *writes) failure(probed bool) (string, writeFailure, bool) {
	w.failedMu.Lock()
	defer w.failedMu.Unlock()
	for _, k := range []string{writeProbe, writeSequencing, writeIndexing} {
		f, ok := w.failed[k]
		if ok && (probed || k != writeSequencing || time.Since(f.at) < unprobedHold) {
			return k, f, true
		}
	}
	return "", writeFailure{}, false
}

// probe runs probe, bounded by probeTimeout, and records it.
func (w *writes) probe(ctx context.Context, probe func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	w.record(writeProbe, probe(ctx))
}

// Health returns the log's state, and an error if the log cannot accept
// or serve entries:
//
//   - ErrNotWritable: a write to storage (an appended batch, the dedup
//     index) failed and none of that kind has succeeded since, or
//     Config.Probe fails; without a Probe, a failed append counts for 10
//     seconds;
//   - the published checkpoint cannot be read from storage, or does not
//     verify (read now, not the copy the log holds);
//   - it is stale: none was read, it was last read longer than
//     MaxCheckpointAge ago (only a limit under the time a read takes makes
//     that so, since Health reads it), or publication stopped for
//     MaxCheckpointAge: a witnessed log's checkpoint (re-cosigned every
//     RepublishInterval) did not change, or an unwitnessed log's does not
//     cover entries it sequenced.
func (l *Log) Health(ctx context.Context) (Health, error) {
	h := Health{Status: "ok", Origin: l.origin, Indexed: l.coveredN.Load(), InFlight: len(l.inflight)}
	fail := func(status string, err error) (Health, error) {
		h.Status = status
		return h, err
	}
	readErr := l.pub.check(ctx)
	c, checked := l.pub.state()
	h.Size = c.size
	if c.raw != nil {
		h.CheckpointAgeMs = time.Since(c.at).Milliseconds()
	}
	if l.cfg.Probe != nil {
		l.writes.probe(ctx, l.cfg.Probe)
	}
	if kind, f, ok := l.writes.failure(l.cfg.Probe != nil); ok {
		select {
		case l.cleanup <- struct{}{}: // failed publications leave files too
		default:
		}
		// The error itself, which may name files, is in the server's log.
		return fail("not_writable", fmt.Errorf("%w: the latest %s write failed %v ago",
			ErrNotWritable, kind, time.Since(f.at).Round(time.Millisecond)))
	}
	if readErr != nil {
		return fail("unservable", fmt.Errorf("%w: %w", errUnservable, readErr))
	}
	if c.raw == nil {
		return fail("stale", fmt.Errorf("%w: none is published yet", errStale))
	}
	max := l.cfg.MaxCheckpointAge
	if d := time.Since(checked); d > max {
		return fail("stale", fmt.Errorf("%w: it was last read %v ago, limit %v", errStale, d.Round(time.Millisecond), max))
	}
	if age := time.Since(c.at); age > max && (l.witnessed || l.sequenced.Load() > c.size) {
		return fail("stale", fmt.Errorf("%w: it is %v old, limit %v", errStale, age.Round(time.Millisecond), max))
	}
	return h, nil
}

func (l *Log) handleHealth(w http.ResponseWriter, r *http.Request) {
	h, err := l.Health(r.Context())
	if err != nil {
		code := codeStale
		switch {
		case errors.Is(err, ErrNotWritable):
			code = codeNotWritable
		case errors.Is(err, errUnservable):
			code = codeUnservable
		}
		writeError(w, http.StatusServiceUnavailable, code, err.Error(), 5)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(h)
}
