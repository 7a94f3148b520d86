package audit

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/docketlog/docket/internal/tlogtest"
)

// TestHTTPFetcherBacksOff: a log that answers 503 and 429 with Retry-After
// while the monitor catches up is waited for, not given up on.
func TestHTTPFetcherBacksOff(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/busy")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s"), is.End("s"))...)
	var n atomic.Int64
	files := http.FileServer(http.Dir(l.Dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			files.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f, err := NewHTTPFetcher(srv.URL, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newMonitor(t, f, k.VKey, t.TempDir(), nil)
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("alerts %v", got)
	}
	if m.Size() != 2 || n.Load() < 6 {
		t.Fatalf("size %d after %d requests", m.Size(), n.Load())
	}
	// Past its retries, a busy log is an error, and so at once is any
	// other refusal.
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusForbidden} {
		busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "no", code)
		}))
		f, _ := NewHTTPFetcher(busy.URL, busy.Client())
		f.Retries = 2
		if _, err := f.ReadCheckpoint(t.Context()); err == nil {
			t.Errorf("a log answering %d: no error", code)
		}
		busy.Close()
	}
}
