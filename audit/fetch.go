package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/transparency-dev/tessera/api/layout"
)

// An HTTPFetcher reads a log's tlog-tiles resources over HTTP, like
// Tessera's client.HTTPFetcher, and also waits and retries when the log
// answers 429 or 503, honouring Retry-After, so that a monitor catching up
// backs off instead of failing. A partial tile or bundle that is gone is
// read as the full one. It is safe for concurrent use.
type HTTPFetcher struct {
	base   *url.URL
	client *http.Client
	// Retries is how many times one request is retried after a 429 or 503
	// (default 5); each wait is the Retry-After the log sent, at most
	// MaxWait (default 30s), or a doubling backoff from 100ms without one.
	Retries int
	MaxWait time.Duration
}

// NewHTTPFetcher returns a fetcher for the log whose tlog-tiles prefix is
// base. A nil client means http.DefaultClient.
func NewHTTPFetcher(base string, client *http.Client) (*HTTPFetcher, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("log URL %q: want http(s)", base)
	}
	if u.Path == "" || u.Path[len(u.Path)-1] != '/' {
		u.Path += "/"
	}
	if client == nil {
		client = http.DefaultClient
	}
	return &HTTPFetcher{base: u, client: client, Retries: 5, MaxWait: 30 * time.Second}, nil
}

// ReadCheckpoint reads the log's checkpoint.
func (h *HTTPFetcher) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return h.get(ctx, layout.CheckpointPath)
}

// ReadTile reads a hash tile; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) { return h.get(ctx, layout.TilePath(l, i, p)) })
}

// ReadEntryBundle reads an entry bundle; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) { return h.get(ctx, layout.EntriesPath(i, p)) })
}

// partialOrFull reads a partial resource, or the full one when the partial
// one no longer exists (tlog-tiles lets a log delete partial tiles once
// full); the full one starts with the same entries.
func partialOrFull(p uint8, read func(uint8) ([]byte, error)) ([]byte, error) {
	b, err := read(p)
	if p > 0 && errors.Is(err, os.ErrNotExist) {
		return read(0)
	}
	return b, err
}

func (h *HTTPFetcher) get(ctx context.Context, path string) ([]byte, error) {
	u := h.base.JoinPath(path)
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, err
		}
		resp, err := h.client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, fmt.Errorf("GET %s: %w", u, err)
		case resp.StatusCode == http.StatusOK:
			return body, nil
		case resp.StatusCode == http.StatusNotFound:
			return nil, fmt.Errorf("GET %s: %w", u, os.ErrNotExist)
		case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < h.Retries:
			wait := backoff
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			wait = min(wait, h.MaxWait)
			backoff *= 2
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		default:
			return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
		}
	}
}
