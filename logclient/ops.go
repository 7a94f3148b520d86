package logclient

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClientOps is how a [Client] reaches a log. [HTTPOps] and [DirOps]
// implement it; tests implement it to inject failures. Implementations must
// be safe for concurrent use.
type ClientOps interface {
	// ReadRemote returns the log's resource at path, a tlog-tiles path
	// relative to the log's URL prefix ("checkpoint", "tile/0/x001/234",
	// "tile/entries/000.p/5"). It reads at most limit bytes, after any
	// decompression, and fails with an error wrapping ErrTooLarge beyond.
	// A resource the log does not have is an error wrapping fs.ErrNotExist;
	// any other answer but success is a *StatusError.
	ReadRemote(ctx context.Context, path string, limit int64) ([]byte, error)

	// Add submits one log entry (DESIGN §3.4) to the log and returns the
	// body of its success answer, a tlog-proof@v1, reading at most limit
	// bytes (ErrTooLarge beyond). A refusal is a *StatusError.
	Add(ctx context.Context, entry []byte, limit int64) ([]byte, error)
}

// Errors of a Client and its ClientOps.
var (
	// ErrRejected: the log refused for good (a 4xx answer); the same
	// request cannot succeed later.
	ErrRejected = errors.New("log rejected the request")
	// ErrTooLarge: an answer is larger than the cap on its kind: for a
	// tile or an entry bundle, what tlog-tiles allows at its width.
	ErrTooLarge = errors.New("log answer larger than tlog-tiles allows")
	// ErrBadProof: the log answered an entry with a proof that does not
	// verify. The log misbehaves or is not the one configured.
	ErrBadProof = errors.New("log answered with a proof that does not verify")
	// ErrMalformed: a tile or entry bundle does not have the shape of its
	// width.
	ErrMalformed = errors.New("malformed log resource")
)

// A StatusError is a log's answer other than success (DESIGN §3.5): its
// HTTP status, the code and message of its JSON error body, and the delay
// its Retry-After asked for.
type StatusError struct {
	Status     int
	Code       string // the error body's "error" member, if any
	Message    string // its "message", or the start of a body that is not JSON
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("log answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Temporary reports whether the request may succeed later: 429 and 5xx.
// Every other status is a refusal that retrying cannot fix.
func (e *StatusError) Temporary() bool {
	switch {
	case e.Status == http.StatusTooManyRequests, e.Status >= 500 && e.Status <= 599:
		// 503 overloaded or shutting down, 500 internal, 502/504 a proxy.
		return true
	default:
		// 400 malformed, 401/403 auth, 404 no such endpoint, 413 too
		// large, 422 bad signature or kid, and anything unexpected.
		return false
	}
}

// Unwrap makes a refusal match ErrRejected.
func (e *StatusError) Unwrap() error {
	if e.Temporary() {
		return nil
	}
	return ErrRejected
}

// maxRetryAfter caps the delay a log can ask for.
const maxRetryAfter = time.Hour

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (RFC 9110 §10.2.3), relative to now. It returns 0 for a missing or bad
// value and caps the delay at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// maxErrorBody bounds the error bodies read.
const maxErrorBody = 4 << 10

// statusError builds the StatusError of a non-success answer.
func statusError(resp *http.Response) *StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &StatusError{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var b struct{ Error, Message string }
	if json.Unmarshal(body, &b) == nil && b.Error != "" {
		e.Code, e.Message = b.Error, b.Message
	} else {
		e.Message = strings.ToValidUTF8(strings.TrimSpace(string(body[:min(len(body), 200)])), "?")
	}
	return e
}

// HTTPOps reaches a log served over HTTP: entries go to POST <url>/add,
// tlog-tiles resources are read below <url>. Resources are asked for with
// Accept-Encoding: gzip and decompressed within the caller's limit.
type HTTPOps struct {
	base   *url.URL
	client *http.Client
	token  string
}

// NewHTTPOps returns the ClientOps of the log whose URL prefix is base (http
// or https). A nil client means one with a 30 s timeout per request. A
// non-empty token is sent as a bearer token with each entry submitted (not
// with reads, which a log serves to anyone).
func NewHTTPOps(base string, client *http.Client, token string) (*HTTPOps, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("log URL %q: want an http or https URL", base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &HTTPOps{base: u, client: client, token: token}, nil
}

// ReadRemote implements ClientOps.
func (h *HTTPOps) ReadRemote(ctx context.Context, path string, limit int64) ([]byte, error) {
	u := h.base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// Asked for explicitly, so that the transport leaves decompression,
	// and its bound, to us.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), fs.ErrNotExist)
	default:
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), statusError(resp))
	}
	var body io.Reader = resp.Body
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	// The compressed stream is bounded too: gzip never grows data by more
	// than a few bytes per 32 KiB block.
	sent := limit
	if enc == "gzip" {
		sent = limit + limit/64 + 1024
	}
	if resp.ContentLength > sent {
		return nil, fmt.Errorf("GET %s: %w: Content-Length %d, limit %d", u.Redacted(), ErrTooLarge, resp.ContentLength, sent)
	}
	size := int64(0) // the body's length, when it is not compressed
	switch enc {
	case "", "identity":
		size = resp.ContentLength
	case "gzip":
		zr, err := gzip.NewReader(io.LimitReader(resp.Body, sent))
		if err != nil {
			return nil, fmt.Errorf("GET %s: gzip: %w", u.Redacted(), err)
		}
		defer zr.Close()
		body = zr
	default:
		return nil, fmt.Errorf("GET %s: unsupported Content-Encoding %q", u.Redacted(), enc)
	}
	data, err := readLimited(body, limit, size)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return data, nil
}

// Add implements ClientOps.
func (h *HTTPOps) Add(ctx context.Context, entry []byte, limit int64) ([]byte, error) {
	return h.post(ctx, entry, limit)
}

// post sends body to POST <url>/add and returns the success answer's body.
func (h *HTTPOps) post(ctx context.Context, body []byte, limit int64) ([]byte, error) {
	u := h.base.JoinPath("add")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	return readLimited(resp.Body, limit, resp.ContentLength)
}

// readLimited reads r to its end, failing with ErrTooLarge past limit
// bytes. size, when positive, is the length r announces (a file's, a
// response's Content-Length): the buffer is allocated once for it instead
// of doubling, but nothing relies on it being right.
func readLimited(r io.Reader, limit, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(min(size, limit)) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// DirOps reads a log's POSIX storage directory (Tessera's layout, which is
// the tlog-tiles layout), for auditing a log from a copy of its files. It
// cannot add entries. It opens only regular files (not a device, a FIFO or
// a directory put in a resource's place, even behind a symbolic link) and
// refuses one larger than the caller's limit before reading it.
type DirOps struct{ root string }

// NewDirOps returns the ClientOps of the log stored in the directory root.
func NewDirOps(root string) DirOps { return DirOps{root: root} }

// ReadRemote implements ClientOps.
func (d DirOps) ReadRemote(_ context.Context, path string, limit int64) ([]byte, error) {
	if !filepath.IsLocal(filepath.FromSlash(path)) {
		return nil, fmt.Errorf("%s: not a path inside the log", path)
	}
	// O_NONBLOCK: opening a FIFO put in place of a resource must not
	// block; it is refused below as not a regular file.
	f, err := os.OpenFile(filepath.Join(d.root, filepath.FromSlash(path)), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err // fs.ErrNotExist for a missing resource
	}
	defer f.Close()
	// Refused before a byte is read: a device (a symbolic link to
	// /dev/zero), a FIFO or a directory, and a file larger than limit.
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %w: not a regular file", f.Name(), ErrMalformed)
	case fi.Size() > limit:
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", f.Name(), ErrTooLarge, fi.Size(), limit)
	}
	data, err := readLimited(f, limit, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return data, nil
}

// Add implements ClientOps: a storage directory is read-only.
func (d DirOps) Add(context.Context, []byte, int64) ([]byte, error) {
	return nil, fmt.Errorf("%w: a log's storage directory takes no entries", ErrRejected)
}
