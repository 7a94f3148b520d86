package log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// MaxBatchEntries bounds the entries of one batch POST /add. The body of
// a batch is bounded like a single entry's, by receipts.MaxEntrySize.
const MaxBatchEntries = 256

// ErrBatch wraps the refusal of a batch as a whole: not a JSON array of
// entries, empty, or over MaxBatchEntries.
var ErrBatch = errors.New("malformed batch")

// AddBatch adds several entries, each as Add does: validated on its own,
// appended unless an identical entry is in the log (strict dedup per
// entry, also within the batch), and answered with its own proof once a
// published checkpoint covers it. It returns one result and one error per
// entry, in order; an entry's error is what Add would have returned for
// it. The batch is admitted whole: when the log is closing, or cannot take
// every entry of it in flight, it returns ErrClosed or ErrOverloaded and
// no entry is added.
func (l *Log) AddBatch(ctx context.Context, entries [][]byte) ([]*Result, []error, error) {
	if len(entries) == 0 || len(entries) > MaxBatchEntries {
		return nil, nil, fmt.Errorf("%w: %d entries, want 1 to %d", ErrBatch, len(entries), MaxBatchEntries)
	}
	if l.closing.Load() {
		return nil, nil, ErrClosed
	}
	for n := range entries {
		select {
		case l.inflight <- struct{}{}:
		default:
			for range n {
				<-l.inflight
			}
			return nil, nil, ErrOverloaded
		}
	}
	results := make([]*Result, len(entries))
	errs := make([]error, len(entries))
	// Every entry is validated before any is sequenced, so that the
	// batch's entries reach the sequencer together and most often share
	// one sequencing batch and one checkpoint: the answer waits for its
	// slowest entry.
	leaves := make([][]byte, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Go(func() { leaves[i], errs[i] = l.admit(e) })
	}
	wg.Wait()
	for i := range entries {
		if errs[i] != nil {
			<-l.inflight
			continue
		}
		wg.Go(func() {
			defer func() { <-l.inflight }()
			results[i], errs[i] = l.addLeaf(ctx, leaves[i])
		})
	}
	wg.Wait()
	return results, errs, nil
}

// isBatch reports whether a POST /add body is the batch form: a JSON
// array, where a single entry is a JSON object.
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// splitBatch returns the elements of a batch body, each as its bytes, for
// receipts.ParseEntry to judge as it judges a single entry.
func splitBatch(body []byte) ([][]byte, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	entries := make([][]byte, len(raw))
	for i, r := range raw {
		entries[i] = r
	}
	return entries, nil
}

// A batchAnswer is one entry's answer in a batch POST /add's answer.
type batchAnswer struct {
	Status     int    `json:"status"`
	Index      uint64 `json:"index,omitempty"`
	Duplicate  bool   `json:"duplicate,omitempty"`
	Proof      string `json:"proof,omitempty"`
	Error      string `json:"error,omitempty"`
	Message    string `json:"message,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

// handleBatch answers a batch POST /add (see Handler).
func (l *Log) handleBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	start := time.Now()
	entries, err := splitBatch(body)
	var results []*Result
	var errs []error
	if err == nil {
		results, errs, err = l.AddBatch(r.Context(), entries)
	}
	if err != nil {
		status, code, retry := statusOf(err)
		if errors.Is(err, ErrBatch) {
			status, code = http.StatusBadRequest, codeMalformed
		}
		l.logger.Info("add batch", "status", status, "entries", len(entries), "err", err)
		writeError(w, status, code, err.Error(), retry)
		return
	}
	if r.Context().Err() != nil {
		l.logger.Info("add batch: client went away", "entries", len(entries), "took", time.Since(start))
		panic(http.ErrAbortHandler)
	}
	answers := make([]batchAnswer, len(entries))
	failed := 0
	for i, res := range results {
		if errs[i] != nil {
			failed++
			status, code, retry := statusOf(errs[i])
			msg := errs[i].Error()
			switch {
			case status == http.StatusInternalServerError:
				l.logger.Error("add batch", "entry", i, "status", status, "err", errs[i])
				msg = "internal error"
			case code == codeNotWritable:
				l.logger.Info("add batch", "entry", i, "status", status, "err", errs[i])
				msg = "the log cannot write to its storage now; retry later"
			}
			answers[i] = batchAnswer{Status: status, Error: code, Message: msg, RetryAfter: retry}
			continue
		}
		answers[i] = batchAnswer{Status: http.StatusOK, Index: res.Index, Duplicate: res.Dup, Proof: string(res.Proof)}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	json.NewEncoder(w).Encode(answers)
	if l.logger.Enabled(r.Context(), slog.LevelDebug) {
		l.logger.Debug("add batch", "status", http.StatusOK, "entries", len(entries), "failed", failed, "took", time.Since(start))
	}
}
