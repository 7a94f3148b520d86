package log

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Tessera retries publishing a checkpoint every checkpoint interval and
// reports each failure (a witness down or refusing, storage not writable)
// through klog, which reaches slog at INFO: several identical lines a
// second for as long as the failure lasts. RepeatsHandler turns them into
// one WARN when failing starts, one WARN summary per repeatEvery while it
// persists, and a new WARN when it starts again after a quiet repeatEvery.
const (
	publishFailure = "publishCheckpoint:"
	repeatEvery    = time.Minute
)

// RepeatsHandler wraps h for Tessera's klog output (klog.SetSlogLogger):
// the checkpoint publisher's failures are logged on a change of state and
// summarised while they persist; every other record passes through.
func RepeatsHandler(h slog.Handler) slog.Handler {
	return &repeats{Handler: h, st: &repeatState{now: time.Now}}
}

type repeats struct {
	slog.Handler
	st *repeatState
}

type repeatState struct {
	mu      sync.Mutex
	now     func() time.Time
	failing bool
	last    time.Time // the last failure seen
	told    time.Time // the last line written
	since   time.Time // the failure's start
	n       int       // failures since told
}

func (r *repeats) Enabled(ctx context.Context, l slog.Level) bool {
	return r.Handler.Enabled(ctx, l) || r.Handler.Enabled(ctx, slog.LevelWarn)
}

func (r *repeats) Handle(ctx context.Context, rec slog.Record) error {
	if !strings.HasPrefix(rec.Message, publishFailure) {
		if !r.Handler.Enabled(ctx, rec.Level) {
			return nil
		}
		return r.Handler.Handle(ctx, rec)
	}
	st := r.st
	st.mu.Lock()
	now := st.now()
	errText := strings.TrimSpace(strings.TrimPrefix(rec.Message, publishFailure))
	var out *slog.Record
	switch {
	case !st.failing || now.Sub(st.last) > repeatEvery:
		st.failing, st.since, st.told, st.n = true, now, now, 0
		o := slog.NewRecord(now, slog.LevelWarn, "checkpoint publishing failing (a witness or the storage); retrying, repeats summarised every minute", 0)
		o.AddAttrs(slog.String("err", errText))
		out = &o
	case now.Sub(st.told) >= repeatEvery:
		o := slog.NewRecord(now, slog.LevelWarn, "checkpoint publishing still failing", 0)
		o.AddAttrs(slog.Int("failures", st.n+1), slog.Duration("for", now.Sub(st.since).Round(time.Second)), slog.String("err", errText))
		st.told, st.n = now, 0
		out = &o
	default:
		st.n++
	}
	st.last = now
	st.mu.Unlock()
	if out == nil || !r.Handler.Enabled(ctx, slog.LevelWarn) {
		return nil
	}
	return r.Handler.Handle(ctx, *out)
}

func (r *repeats) WithAttrs(as []slog.Attr) slog.Handler {
	return &repeats{Handler: r.Handler.WithAttrs(as), st: r.st}
}

func (r *repeats) WithGroup(name string) slog.Handler {
	return &repeats{Handler: r.Handler.WithGroup(name), st: r.st}
}
