package logclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"
)

// BatchAdder is implemented by ClientOps that can submit several entries
// in one request, the batch form of POST /add (DESIGN §3.5). [HTTPOps]
// implements it.
type BatchAdder interface {
	// AddBatch submits entries in one request and returns one answer per
	// entry, in order, reading at most limit bytes of the answer
	// (ErrTooLarge beyond). A refusal of the request as a whole is a
	// *StatusError.
	AddBatch(ctx context.Context, entries [][]byte, limit int64) ([]BatchAnswer, error)
}

// A BatchAnswer is the log's answer to one entry of a batch: its proof
// text, or the *StatusError a single add of the entry would have got.
type BatchAnswer struct {
	Proof []byte
	Err   error
}

// Bounds of one batch, as the log takes them: at most MaxBatchEntries
// entries, and a body (the entries, comma-separated in brackets) of at most
// MaxBatchBody bytes, a single entry's limit.
const (
	MaxBatchEntries = 256
	MaxBatchBody    = 65535
	// MaxBatchAnswer bounds the answer to one batch; beyond it the
	// entries are sent one by one, each answer bounded by MaxProofSize.
	MaxBatchAnswer = 16 << 20
)

// SubmitBatch is Submit in batches: where the ClientOps is a BatchAdder,
// it packs the entries into batches within the log's bounds and sends up
// to Config.Concurrency batches at a time; an entry answered with a
// temporary error is sent again, with the others of its batch that were,
// after the backoff (and Retry-After) that Add would wait. Each proof is
// verified as Add verifies it. An entry too large to share a batch, a
// ClientOps that is no BatchAdder, and a log that refuses a batch as a
// whole for good (a 4xx: an older log answers 400, 404 or 405), or answers
// it with anything but one answer per entry, fall back to Add, entry by
// entry: each entry then gets its own answer, each proof verified.
// done is called exactly once per entry, as for Submit.
func (c *Client) SubmitBatch(ctx context.Context, entries [][]byte, done func(i int, p *Proof, err error)) error {
	ba, ok := c.ops.(BatchAdder)
	if !ok {
		return c.Submit(ctx, entries, done)
	}
	var g errgroup.Group
	g.SetLimit(c.cfg.Concurrency)
	for _, b := range packBatches(entries) {
		if err := ctx.Err(); err != nil {
			for _, i := range b {
				done(i, nil, err)
			}
			continue
		}
		g.Go(func() error {
			c.sendBatch(ctx, ba, entries, b, done)
			return nil
		})
	}
	g.Wait()
	return ctx.Err()
}

// packBatches groups the positions of entries into batches within the
// log's bounds, in order; an entry that cannot share a batch is alone.
func packBatches(entries [][]byte) [][]int {
	var out [][]int
	var cur []int
	size := 1 // "["
	for i, e := range entries {
		if len(cur) > 0 && (len(cur) == MaxBatchEntries || size+1+len(e)+1 > MaxBatchBody) {
			out = append(out, cur)
			cur, size = nil, 1
		}
		cur = append(cur, i)
		size += len(e) + 1 // the entry and "," or "]"
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// sendBatch submits the entries at positions batch until each is done.
func (c *Client) sendBatch(ctx context.Context, ba BatchAdder, entries [][]byte, batch []int, done func(int, *Proof, error)) {
	if len(batch) == 1 {
		p, err := c.Add(ctx, entries[batch[0]])
		done(batch[0], p, err)
		return
	}
	remaining := batch
	fallback := false
	err := c.retry(ctx, "add batch", 0, func() error {
		body := make([][]byte, len(remaining))
		for j, i := range remaining {
			body[j] = entries[i]
		}
		answers, err := ba.AddBatch(ctx, body, min(int64(len(body))*MaxProofSize, MaxBatchAnswer))
		var se *StatusError
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrMalformed) || errors.As(err, &se) && !se.Temporary() {
			fallback = true
			return nil
		}
		if err != nil {
			return err
		}
		var again []int
		var last error
		for j, a := range answers {
			i := remaining[j]
			switch {
			case a.Err == nil:
				p, err := c.verify(entries[i], a.Proof)
				done(i, p, err)
			case temporary(a.Err):
				again, last = append(again, i), a.Err
			default:
				done(i, nil, a.Err)
			}
		}
		remaining = again
		return last
	})
	switch {
	case fallback:
		for _, i := range remaining {
			p, err := c.Add(ctx, entries[i])
			done(i, p, err)
		}
	case err != nil:
		for _, i := range remaining {
			done(i, nil, err)
		}
	}
}

// verify checks the proof text the log answered entry with.
func (c *Client) verify(entry, text []byte) (*Proof, error) {
	vp, err := c.cfg.Verifier.Verify(entry, text)
	if err != nil {
		// Not retried: a log that answers with a bad proof is misbehaving
		// or misconfigured, and will not be hammered.
		return nil, fmt.Errorf("%w: %w", ErrBadProof, err)
	}
	return &Proof{Text: text, Verified: vp}, nil
}

// AddBatch implements BatchAdder.
func (h *HTTPOps) AddBatch(ctx context.Context, entries [][]byte, limit int64) ([]BatchAnswer, error) {
	body := append([]byte("["), bytes.Join(entries, []byte(","))...)
	body = append(body, ']')
	data, err := h.post(ctx, body, limit)
	if err != nil {
		return nil, err
	}
	return parseBatchAnswer(data, len(entries))
}

// parseBatchAnswer reads the answer to a batch of n entries: a JSON array
// of n objects, each a proof (status 200) or an error.
func parseBatchAnswer(data []byte, n int) ([]BatchAnswer, error) {
	var raw []struct {
		Status     int    `json:"status"`
		Proof      string `json:"proof"`
		Error      string `json:"error"`
		Message    string `json:"message"`
		RetryAfter int64  `json:"retry_after"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: batch answer: %w", ErrMalformed, err)
	}
	if len(raw) != n {
		return nil, fmt.Errorf("%w: batch answer has %d answers for %d entries", ErrMalformed, len(raw), n)
	}
	out := make([]BatchAnswer, n)
	for i, a := range raw {
		switch {
		case a.Status == http.StatusOK && a.Proof != "":
			out[i].Proof = []byte(a.Proof)
		case a.Status == http.StatusOK, a.Status < 100, a.Status > 599:
			return nil, fmt.Errorf("%w: batch answer %d: status %d without a proof", ErrMalformed, i, a.Status)
		default:
			ra := time.Duration(min(max(a.RetryAfter, 0), int64(maxRetryAfter/time.Second))) * time.Second
			out[i].Err = &StatusError{Status: a.Status, Code: a.Error, Message: a.Message, RetryAfter: ra}
		}
	}
	return out, nil
}
