package witness

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// ServeHTTP serves the witness's HTTP interface (see the package comment).
// A request whose declared Content-Length is over Config.MaxBodySize is
// answered 413 at once, whatever its path, without reading any of the body;
// a body without a Content-Length (chunked) is cut off at MaxBodySize as it
// is read.
func (w *Witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.ContentLength > w.maxBody {
		// The server closes the connection after the answer rather than
		// read the rest of the body.
		rw.Header().Set("Connection", "close")
		http.Error(rw, fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, w.maxBody),
			http.StatusRequestEntityTooLarge)
		w.logger.DebugContext(r.Context(), "request body too large", "path", r.URL.Path, "length", r.ContentLength)
		return
	}
	w.mux.ServeHTTP(rw, r)
}

// statusOf maps an add-checkpoint error to the tlog-witness status code.
func statusOf(err error) int {
	var conflict *conflictError
	var inconsistent *inconsistencyError
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable // the client left or the server is shutting down
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errMalformed):
		return http.StatusBadRequest
	case errors.Is(err, errUnknownLog):
		return http.StatusNotFound
	case errors.Is(err, errBadSignature):
		return http.StatusForbidden
	case errors.Is(err, errRateLimited):
		return http.StatusTooManyRequests
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.As(err, &inconsistent), errors.Is(err, errProofNotEmpty),
		errors.Is(err, errProofFromZero), errors.Is(err, errEmptyRoot):
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

func (w *Witness) serveAddCheckpoint(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var c checkpoint
	var cosig []byte
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, w.maxBody))
	if err == nil {
		c, cosig, err = w.addCheckpoint(r.Context(), body)
	}
	status := statusOf(err)

	level := slog.LevelInfo
	switch {
	case status == http.StatusUnprocessableEntity:
		level = slog.LevelWarn
	case status == http.StatusServiceUnavailable:
		level = slog.LevelDebug
	case status >= 500:
		level = slog.LevelError
	case status != http.StatusOK:
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{slog.Int("status", status), slog.String("origin", c.Origin),
		slog.Uint64("size", c.Size), slog.Duration("duration", time.Since(start))}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	w.logger.LogAttrs(r.Context(), level, "add-checkpoint", attrs...)

	var conflict *conflictError
	switch {
	case status == http.StatusOK:
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Write(cosig)
	case errors.As(err, &conflict):
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", conflict.Size)
	case status == http.StatusTooManyRequests:
		rw.Header().Set("Retry-After", "1")
		http.Error(rw, err.Error(), status)
	case status == http.StatusInternalServerError:
		http.Error(rw, "internal error", status)
	default:
		http.Error(rw, err.Error(), status)
	}
}

func (w *Witness) serveCheckpoint(rw http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var signedNote []byte
	err := w.db.QueryRowContext(r.Context(), "SELECT note FROM checkpoint WHERE id = ?", id).Scan(&signedNote)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			http.Error(rw, "no checkpoint cosigned for this log", http.StatusNotFound)
			return
		}
		w.logger.ErrorContext(r.Context(), "reading checkpoint", "error", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-cache")
	rw.Write(signedNote)
}

func (w *Witness) serveEvidence(rw http.ResponseWriter, r *http.Request) {
	var after int64
	if s := r.URL.Query().Get("after"); s != "" {
		var err error
		if after, err = strconv.ParseInt(s, 10, 64); err != nil {
			http.Error(rw, "after: not an integer", http.StatusBadRequest)
			return
		}
	}
	list, err := w.ListEvidence(r.Context(), after)
	if err != nil {
		w.logger.ErrorContext(r.Context(), "listing evidence", "error", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	if list == nil {
		list = []Evidence{}
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-cache")
	json.NewEncoder(rw).Encode(list)
}

func (w *Witness) serveHealth(rw http.ResponseWriter, r *http.Request) {
	if _, err := w.db.ExecContext(r.Context(), "SELECT 1 FROM checkpoint LIMIT 1"); err != nil {
		w.logger.ErrorContext(r.Context(), "health check", "error", err)
		http.Error(rw, "database unavailable", http.StatusServiceUnavailable)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Write([]byte("ok\n"))
}
