// Package hostiletest serves, on a real loopback HTTP server, the answers a
// party being verified can give a verifier that fetches what it names:
// bodies that never end or are too large, gzip bombs, encodings not asked
// for, redirect loops and chains, a header that never ends, a slow loris
// and a server that never answers. The TRACE fetcher's tests and the
// end-to-end tests of docket verify -trace -fetch share it.
package hostiletest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Paths served by NewServer. Each also answers under any path below it
// ("/drip/transcript.json"), so that a document resolved against it
// (chain.jsonl next to a transcript) meets the same answer.
const (
	OK         = "/ok"          // 200 "[]"
	Missing    = "/missing"     // 404
	Declared   = "/declared"    // Content-Length 1 GiB, no body
	Endless    = "/endless"     // a body that never ends
	GzipBomb   = "/gzip-bomb"   // gzip of 64 MiB of zeros (about 64 KiB)
	GzipOK     = "/gzip-ok"     // gzip of "[]"
	Brotli     = "/br"          // Content-Encoding br, not asked for
	DoubleGzip = "/double-gzip" // Content-Encoding "gzip, gzip"
	Loop       = "/loop"        // a redirect to itself
	Hops       = "/hops/"       // /hops/N redirects N+1 times, then to OK
	ToFile     = "/to-file"     // a redirect to file:///etc/passwd
	HugeHeader = "/huge-header" // a 100 KiB header
	Drip       = "/drip"        // a slow loris: one byte every 20 ms, forever
	Silent     = "/silent"      // no answer, ever
)

var bomb = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	return b.Bytes()
})

// NewServer starts the server; it is closed when the test ends.
func NewServer(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	handle := func(path string, h http.HandlerFunc) {
		mux.HandleFunc(path, h)
		if !strings.HasSuffix(path, "/") {
			mux.HandleFunc(path+"/", h)
		}
	}
	handle(OK, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "[]") })
	handle(Missing, http.NotFound)
	handle(Declared, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(1<<30))
		w.WriteHeader(http.StatusOK)
	})
	handle(Endless, func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 32<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	})
	handle(GzipBomb, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb())
	})
	handle(GzipOK, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte("[]"))
		zw.Close()
	})
	handle(Brotli, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		fmt.Fprint(w, "[]")
	})
	handle(DoubleGzip, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip, gzip")
		fmt.Fprint(w, "[]")
	})
	handle(Loop, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) })
	handle(Hops, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, Hops+"%d", &n)
		if n == 0 {
			http.Redirect(w, r, OK, http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("%s%d", Hops, n-1), http.StatusFound)
	})
	handle(ToFile, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	handle(HugeHeader, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Pad", strings.Repeat("a", 100<<10))
		fmt.Fprint(w, "[]")
	})
	handle(Drip, func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	handle(Silent, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
