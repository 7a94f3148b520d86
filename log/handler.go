package log

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/transparency-dev/tessera/api/layout"
)

// Handler returns the log's HTTP API (DESIGN §3.5):
//
//	POST /add                       one entry → 200 tlog-proof@v1 text
//	POST /add                       a batch: a JSON array of entries →
//	                                200 a JSON array of answers (below)
//	GET  /checkpoint                the published checkpoint (no-cache)
//	GET  /tile/<L>/<N>[.p/<W>]      hash tiles (immutable)
//	GET  /tile/entries/<N>[.p/<W>]  entry bundles (immutable, gzip if accepted)
//	GET  /health                    200 while the log can accept and serve
//	                                entries (see Health), else 503
//
// Every other answer is an error in JSON, {"error": "<code>", "message":
// "…"}, with the status of statusOf: unknown or non-canonical paths (404,
// never a redirect), methods a path does not serve, CONNECT, OPTIONS and
// TRACE included (405 with Allow), and, on every path, a declared
// Content-Length over receipts.MaxEntrySize (413 at once, the body unread,
// then the connection closed); 503 answers carry Retry-After. The body of
// POST /add is judged on its bytes, whatever its Content-Type says. A POST /add whose body cannot be
// read in full (cut short, or too slow for the server's ReadTimeout) is
// answered 400 incomplete_body, or its connection is closed: never 200
// without a proof. The answers that net/http gives before any handler runs
// (malformed requests, headers too large) are JSON too when the log is
// served through a ConnLimiter.
//
// The batch form of POST /add (DESIGN §3.5: "a batch form may be added")
// is a body whose first byte past white space is "[": a JSON array of
// 1 to MaxBatchEntries entries, the whole body bounded by
// receipts.MaxEntrySize as a single entry's is (413 beyond, as above).
// Each element is judged as the body of a single POST /add would be, its
// bytes as sent, and deduplicated strictly (an entry repeated within the
// batch, or already in the log, is answered with the same index). A batch
// that is not a JSON array of that many elements is answered 400
// malformed_entry; a batch the log cannot take whole is answered 503 +
// Retry-After (overloaded, shutting_down) and none of its entries is
// added. Otherwise the answer is 200 with a JSON array holding, in order,
// one object per entry: {"status": 200, "index": N, "duplicate": bool,
// "proof": "<tlog-proof@v1 text>"}, or {"status": S, "error": "<code>",
// "message": "…", "retry_after": seconds} with the status and code a
// single add of that entry would have been answered with. A client that
// goes away before the answer has its connection closed, as for one entry.
func (l *Log) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add", l.handleAdd)
	mux.HandleFunc("GET /checkpoint", l.handleCheckpoint)
	mux.HandleFunc("GET /tile/{path...}", l.handleTile)
	mux.HandleFunc("GET /health", l.handleHealth)
	for path, allow := range map[string]string{"/add": "POST", "/checkpoint": "GET, HEAD", "/tile/": "GET, HEAD", "/health": "GET, HEAD"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, codeMethod, r.Method+" is not allowed here; use "+allow, 0)
		})
	}
	notFound := func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, "no such resource", 0)
	}
	mux.HandleFunc("/", notFound)
	mux.HandleFunc("/tile", notFound) // else the mux redirects it to /tile/
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.ContentLength > receipts.MaxEntrySize:
			// Refused before any of the body is read; the server then
			// closes the connection rather than read the rest.
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge,
				fmt.Sprintf("Content-Length %d is over the limit of %d bytes", r.ContentLength, receipts.MaxEntrySize), 0)
			l.logger.Info("request body too large", "method", r.Method, "length", r.ContentLength)
		case r.Method == http.MethodConnect, r.RequestURI == "*":
			// The log is no proxy and has no server-wide options.
			w.Header().Set("Allow", "GET, HEAD, POST")
			writeError(w, http.StatusMethodNotAllowed, codeMethod, r.Method+" is not served; the log serves GET, HEAD and POST", 0)
		case !canonical(r.URL.Path):
			writeError(w, http.StatusNotFound, codeNotFound, "not a canonical path", 0) // the mux would redirect
		default:
			mux.ServeHTTP(w, r)
		}
	})
}

// canonical reports whether p is an absolute path that the mux serves as
// it is: no empty, "." or ".." elements.
func canonical(p string) bool {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return strings.HasPrefix(p, "/") && c == p
}

// Error codes in error bodies.
const (
	codeMalformed    = "malformed_entry"
	codeTooLarge     = "entry_too_large"
	codeSignature    = "bad_signature"
	codeUnauthorized = "unauthorized"
	codeForbidden    = "issuer_not_allowed"
	codeOverloaded   = "overloaded"
	codeNotPublished = "not_published"
	codeClosing      = "shutting_down"
	codeInternal     = "internal_error"
	codeNotFound     = "not_found"
	codeMethod       = "method_not_allowed"
	codeIncomplete   = "incomplete_body"
	codeStale        = "stale_checkpoint"
	codeUnservable   = "checkpoint_unreadable"
	codeNotWritable  = "not_writable"
)

// statusOf maps an error of Add to its HTTP status, error code and
// Retry-After seconds (0: none), following DESIGN §3.5.
func statusOf(err error) (status int, code string, retryAfter int) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, receipts.ErrEntryTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, codeTooLarge, 0
	case errors.Is(err, errIncompleteBody):
		return http.StatusBadRequest, codeIncomplete, 0
	case errors.Is(err, receipts.ErrMalformedEntry):
		return http.StatusBadRequest, codeMalformed, 0
	case errors.Is(err, receipts.ErrEntrySignature):
		return http.StatusUnprocessableEntity, codeSignature, 0
	case errors.Is(err, ErrIssuerNotAllowed):
		return http.StatusForbidden, codeForbidden, 0
	case errors.Is(err, ErrOverloaded):
		return http.StatusServiceUnavailable, codeOverloaded, 1
	case errors.Is(err, ErrNotPublished):
		return http.StatusServiceUnavailable, codeNotPublished, 2
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable, codeClosing, 5
	case errors.Is(err, ErrNotWritable):
		return http.StatusServiceUnavailable, codeNotWritable, 5
	default:
		return http.StatusInternalServerError, codeInternal, 0
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string, retryAfter int) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, msg})
}

func (l *Log) handleAdd(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if l.RequiresToken() {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !l.Authorized(strings.TrimSpace(tok)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="docket-log"`)
			writeError(w, http.StatusUnauthorized, codeUnauthorized, "a valid bearer token is required to write", 0)
			l.logger.Info("add", "status", http.StatusUnauthorized, "remote", r.RemoteAddr)
			return
		}
	}
	body, err := readBody(w, r)
	if err == nil && isBatch(body) {
		l.handleBatch(w, r, body)
		return
	}
	var res *Result
	if err == nil {
		res, err = l.Add(r.Context(), body)
	} else if !errors.As(err, new(*http.MaxBytesError)) {
		err = fmt.Errorf("%w: %w", errIncompleteBody, err)
		w.Header().Set("Connection", "close")
	}
	if err != nil {
		if r.Context().Err() != nil && !errors.Is(err, errIncompleteBody) {
			// The client went away while its entry was being appended:
			// close the connection rather than let the server answer 200
			// with no proof.
			l.logger.Info("add: client went away", "err", err, "took", time.Since(start))
			panic(http.ErrAbortHandler)
		}
		status, code, retry := statusOf(err)
		msg := err.Error()
		switch {
		case status == http.StatusInternalServerError:
			l.logger.Error("add", "status", status, "err", err)
			msg = "internal error"
		case code == codeNotWritable:
			// The error names files; the server's log has it.
			l.logger.Info("add", "status", status, "err", err, "took", time.Since(start))
			msg = "the log cannot write to its storage now; retry later"
		default:
			l.logger.Info("add", "status", status, "err", err, "took", time.Since(start))
		}
		writeError(w, status, code, msg, retry)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Docket-Index", strconv.FormatUint(res.Index, 10))
	h.Set("Docket-Duplicate", strconv.FormatBool(res.Dup))
	w.Write(res.Proof)
	if l.logger.Enabled(r.Context(), slog.LevelDebug) { // else its arguments would still be allocated
		l.logger.Debug("add", "status", http.StatusOK, "index", res.Index, "dup", res.Dup, "size", res.Size, "took", time.Since(start))
	}
}

// errIncompleteBody is readBody's error when the body was cut short or
// its read timed out.
var errIncompleteBody = errors.New("incomplete request body")

// readBody reads a request body of at most receipts.MaxEntrySize bytes, in
// one allocation when the client sent its Content-Length.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	n := min(max(r.ContentLength, 0), receipts.MaxEntrySize)
	buf := bytes.NewBuffer(make([]byte, 0, n+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, receipts.MaxEntrySize))
	return buf.Bytes(), err
}

func (l *Log) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	data, err := l.reader.ReadCheckpoint(r.Context())
	l.serve(w, r, "checkpoint", data, err, "text/plain; charset=utf-8", "no-cache", false)
}

func (l *Log) handleTile(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("path")
	var p string
	var read func(context.Context) ([]byte, error)
	var entries bool
	if idx, ok := strings.CutPrefix(rest, "entries/"); ok {
		i, w8, err := layout.ParseTileIndexPartial(idx)
		if err != nil {
			writeError(w, http.StatusNotFound, codeNotFound, "no such entry bundle", 0)
			return
		}
		p, entries = layout.EntriesPath(i, w8), true
		read = func(ctx context.Context) ([]byte, error) { return l.reader.ReadEntryBundle(ctx, i, w8) }
	} else {
		level, idx, _ := strings.Cut(rest, "/")
		lv, i, w8, err := layout.ParseTileLevelIndexPartial(level, idx)
		if err != nil {
			writeError(w, http.StatusNotFound, codeNotFound, "no such tile", 0)
			return
		}
		p = layout.TilePath(lv, i, w8)
		read = func(ctx context.Context) ([]byte, error) { return l.reader.ReadTile(ctx, lv, i, w8) }
	}
	// Serve only canonical paths: each resource has one URL.
	if p != "tile/"+rest {
		writeError(w, http.StatusNotFound, codeNotFound, "not a canonical tile path", 0)
		return
	}
	data, err := read(r.Context())
	l.serve(w, r, p, data, err, "application/octet-stream", "public, max-age=31536000, immutable", entries)
}

// serve answers with a resource read through the Tessera LogReader.
func (l *Log) serve(w http.ResponseWriter, r *http.Request, p string, data []byte, err error, ctype, cache string, compress bool) {
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, codeNotFound, "not found", 0)
		return
	}
	if err != nil {
		l.logger.Error("serving "+p, "err", err)
		writeError(w, http.StatusInternalServerError, codeInternal, "internal error", 0)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	if compress {
		h.Add("Vary", "Accept-Encoding")
	}
	if compress && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		zw.Write(data)
		zw.Close()
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}
