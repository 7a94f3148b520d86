package audit

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/transparency-dev/tessera/api/layout"
)

// An HTTPFetcher reads a log's tlog-tiles resources over HTTP, like
// Tessera's client.HTTPFetcher, and also waits and retries when the log
// answers 429 or 503, honouring Retry-After, so that a monitor catching up
// backs off instead of failing. A partial tile or bundle that is gone is
// read as the full one.
//
// It takes no more of a resource than tlog-tiles allows (MaxCheckpointSize,
// MaxTileSize, MaxBundleSize, and for a partial resource its width), counted
// after any Content-Encoding is undone, so that a gzip bomb costs what a
// legal resource does; it refuses a bundle of more entries than its width
// before returning it. It is safe for concurrent use.
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
	return h.get(ctx, layout.CheckpointPath, MaxCheckpointSize)
}

// ReadTile reads a hash tile; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	return readTile(l, i, p, func(path string, limit int64) ([]byte, error) { return h.get(ctx, path, limit) })
}

// ReadEntryBundle reads an entry bundle; p > 0 asks for a partial one.
func (h *HTTPFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	return readEntryBundle(i, p, func(path string, limit int64) ([]byte, error) { return h.get(ctx, path, limit) })
}

// A FileFetcher reads a log's tlog-tiles resources from its POSIX storage
// directory (Tessera's layout) within the same bounds as an HTTPFetcher: it
// refuses a file larger than its resource may be before reading it, reads no
// more than that even from a file that grows, and opens only regular files.
type FileFetcher struct {
	Root string
}

// ReadCheckpoint reads the log's checkpoint.
func (f FileFetcher) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return f.read(layout.CheckpointPath, MaxCheckpointSize)
}

// ReadTile reads a hash tile; p > 0 asks for a partial one.
func (f FileFetcher) ReadTile(ctx context.Context, l, i uint64, p uint8) ([]byte, error) {
	return readTile(l, i, p, f.read)
}

// ReadEntryBundle reads an entry bundle; p > 0 asks for a partial one.
func (f FileFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	return readEntryBundle(i, p, f.read)
}

func (f FileFetcher) read(path string, limit int64) ([]byte, error) {
	file, err := os.Open(filepath.Join(f.Root, filepath.FromSlash(path)))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case fi.Size() > limit:
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", path, ErrOversized, fi.Size(), limit)
	}
	return readAtMost(file, path, limit, fi.Size())
}

// readAtMost reads r to its end, refusing more than limit bytes. size, if
// not negative, is how many bytes r is expected to hold: the buffer is
// allocated once for them.
func readAtMost(r io.Reader, what string, limit, size int64) ([]byte, error) {
	b := make([]byte, 0, 512)
	if size >= 0 {
		b = make([]byte, 0, min(size, limit)+1) // +1: room to see the end
	}
	lr := io.LimitReader(r, limit+1)
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(b) == cap(b) {
			// Double, but never past limit+1: the bytes a refusal needs.
			nb := make([]byte, len(b), min(2*cap(b), int(limit)+1))
			copy(nb, b)
			b = nb
		}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", what, ErrOversized, limit)
	}
	return b, nil
}

// readTile reads the hash tile at l/i of partial width p (or the full one
// once the partial one is gone) through read, which takes at most limit
// bytes of a path, and checks that it holds exactly its width of hashes.
func readTile(l, i uint64, p uint8, read func(path string, limit int64) ([]byte, error)) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) {
		path := layout.TilePath(l, i, p)
		b, err := read(path, int64(width(p)*sha256.Size))
		if err == nil && len(b) != width(p)*sha256.Size {
			err = fmt.Errorf("%s: %d bytes, want %d hashes", path, len(b), width(p))
		}
		return b, err
	})
}

// readEntryBundle reads entry bundle i of partial width p (or the full one
// once the partial one is gone) through read, and refuses it, before anyone
// materialises its entries, when it holds more entries than its width.
func readEntryBundle(i uint64, p uint8, read func(path string, limit int64) ([]byte, error)) ([]byte, error) {
	return partialOrFull(p, func(p uint8) ([]byte, error) {
		path := layout.EntriesPath(i, p)
		b, err := read(path, bundleLimit(width(p)))
		if err != nil {
			return nil, err
		}
		if _, err := countEntries(b, width(p)); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return b, nil
	})
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

func (h *HTTPFetcher) get(ctx context.Context, path string, limit int64) ([]byte, error) {
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
		if resp.StatusCode == http.StatusOK {
			// The transport undoes a gzip Content-Encoding as it reads: the
			// limit counts the bytes it yields, not the bytes sent.
			var body []byte
			if resp.ContentLength > limit {
				err = fmt.Errorf("GET %s: %w: Content-Length %d, limit %d", u, ErrOversized, resp.ContentLength, limit)
			} else {
				body, err = readAtMost(resp.Body, "GET "+u.String(), limit, resp.ContentLength)
			}
			resp.Body.Close()
			return body, err
		}
		// Drain a little of an error body so the connection can be reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		switch {
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
