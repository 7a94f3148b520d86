package audit

import (
	"context"
	"net/http"
	"time"

	"github.com/docketlog/docket/logclient"
)

// An HTTPFetcher reads a log's tlog-tiles resources over HTTP through the
// project's one log client (package logclient): it waits and retries when
// the log answers 429 or 5xx, honouring Retry-After, so that a monitor
// catching up backs off instead of failing, and it reads a partial tile or
// bundle that is gone as the full one.
//
// It takes no more of a resource than tlog-tiles allows (MaxCheckpointSize,
// and for a tile or bundle what its width can hold), counted after any
// Content-Encoding is undone, so that a gzip bomb costs what a legal
// resource does; it refuses a bundle of more entries than its width before
// returning it. It is safe for concurrent use once its fields are set.
type HTTPFetcher struct {
	ops *logclient.HTTPOps
	// Retries is how many times one request is retried after a 429, a 5xx
	// or a network error (default 5); each wait is the Retry-After the log
	// sent, or a doubling backoff from 100ms up to MaxWait (default 30s).
	Retries int
	MaxWait time.Duration
}

// NewHTTPFetcher returns a fetcher for the log whose tlog-tiles prefix is
// base. A nil client means one with a 30 s timeout per request.
func NewHTTPFetcher(base string, client *http.Client) (*HTTPFetcher, error) {
	ops, err := logclient.NewHTTPOps(base, client, "")
	if err != nil {
		return nil, err
	}
	return &HTTPFetcher{ops: ops, Retries: 5, MaxWait: 30 * time.Second}, nil
}

func (h *HTTPFetcher) client() *logclient.Client {
	c, _ := logclient.New(h.ops, logclient.Config{ReadAttempts: max(h.Retries, 0) + 1, MinBackoff: 100 * time.Millisecond, MaxBackoff: h.MaxWait})
	return c
}

// ReadCheckpoint reads the log's checkpoint, unverified.
func (h *HTTPFetcher) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return h.client().ReadCheckpoint(ctx)
}

// ReadTile reads a hash tile; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	return h.client().ReadTile(ctx, l, i, p)
}

// ReadEntryBundle reads an entry bundle; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	return h.client().ReadEntryBundle(ctx, i, p)
}

// A FileFetcher reads a log's tlog-tiles resources from its POSIX storage
// directory (Tessera's layout) through the log client's logclient.DirOps,
// within the same bounds as an HTTPFetcher: it refuses a file larger than
// its resource may be before reading it, reads no more than that even from
// a file that grows, and opens only regular files.
type FileFetcher struct {
	Root string
}

func (f FileFetcher) client() *logclient.Client {
	c, _ := logclient.New(logclient.NewDirOps(f.Root), logclient.Config{})
	return c
}

// ReadCheckpoint reads the log's checkpoint, unverified.
func (f FileFetcher) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return f.client().ReadCheckpoint(ctx)
}

// ReadTile reads a hash tile; p > 0 asks for a partial one.
func (f FileFetcher) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	return f.client().ReadTile(ctx, l, i, p)
}

// ReadEntryBundle reads an entry bundle; p > 0 asks for a partial one.
func (f FileFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	return f.client().ReadEntryBundle(ctx, i, p)
}
