package logclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/logclient"
)

// fakeLog serves POST /add from a tlogtest.Log over HTTP, as docket-log
// answers it (strict dedup, a tlog-proof@v1 body), and injects failures:
// the first busy requests get 503 with Retry-After, entries containing
// "reject" get 422, and with lie set every proof is for another entry.
type fakeLog struct {
	mu         sync.Mutex
	log        *tlogtest.Log
	index      map[string]uint64
	busy       int
	retryAfter string
	lie        bool
	posts      int
}

func newFakeLog() *fakeLog {
	return &fakeLog{log: tlogtest.New("example.com/log"), index: map[string]uint64{}, retryAfter: "0"}
}

func (f *fakeLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/add" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if f.busy > 0 {
		f.busy--
		w.Header().Set("Retry-After", f.retryAfter)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"overloaded","message":"busy"}`)
		return
	}
	if bytes.Contains(body, []byte("reject")) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"error":"bad_signature","message":"no"}`)
		return
	}
	idx, ok := f.index[string(body)]
	if !ok {
		idx = f.log.Tree.Size()
		f.index[string(body)] = idx
		f.log.Tree.AppendData(body)
	}
	if f.lie {
		f.log.Tree.AppendData([]byte("another entry"))
		idx = f.log.Tree.Size() - 1
	}
	w.Write(f.log.Proof(idx))
}

func (f *fakeLog) indexOf(entry []byte) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.index[string(entry)]
}

func (f *fakeLog) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts
}

// newClient returns a client of the fake log served over loopback HTTP.
func newClient(t *testing.T, f *fakeLog) *logclient.Client {
	t.Helper()
	return newClientOf(t, f, f)
}

// newClientOf returns a client of h, served over loopback HTTP, that
// verifies proofs against f's key.
func newClientOf(t *testing.T, f *fakeLog, h http.Handler) *logclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ops, err := logclient.NewHTTPOps(srv.URL, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := c2sp.NewProofVerifier(f.log.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := logclient.New(ops, logclient.Config{Verifier: v, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAdd(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(*fakeLog)
		entry     string
		wantErr   error // nil: a verified proof
		wantPosts int
	}{
		{"accepted", func(*fakeLog) {}, "entry one", nil, 1},
		{"busy, then accepted", func(f *fakeLog) { f.busy = 3 }, "entry two", nil, 4},
		{"rejected is not retried", func(*fakeLog) {}, "reject me", logclient.ErrRejected, 1},
		{"a bad proof is not retried", func(f *fakeLog) { f.lie = true }, "entry three", logclient.ErrBadProof, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLog()
			tt.setup(f)
			c := newClient(t, f)
			p, err := c.Add(t.Context(), []byte(tt.entry))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Add(%q) = %v, want %v", tt.entry, err, tt.wantErr)
			}
			if err == nil {
				if want := f.indexOf([]byte(tt.entry)); p.Verified.Index != want {
					t.Errorf("Add(%q) index = %d, want %d", tt.entry, p.Verified.Index, want)
				}
				if _, err := c.Verifier().Verify([]byte(tt.entry), p.Text); err != nil {
					t.Errorf("Verify(Add(%q).Text) = %v", tt.entry, err)
				}
			}
			if got := f.postCount(); got != tt.wantPosts {
				t.Errorf("Add(%q) posted %d times, want %d", tt.entry, got, tt.wantPosts)
			}
		})
	}
}

func TestAddUntilContextEnds(t *testing.T) {
	f := newFakeLog()
	f.busy = 1 << 30
	c := newClient(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := c.Add(ctx, []byte("entry"))
	var se *logclient.StatusError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &se) || se.Code != "overloaded" {
		t.Fatalf("Add with the log always busy = %v, want the deadline and the last 503", err)
	}
	if f.postCount() < 2 {
		t.Errorf("Add posted %d times before the deadline, want retries", f.postCount())
	}
}

// delayHandler records the delay of the first retry a Client logs, and
// cancels the attempt instead of waiting it out.
type delayHandler struct {
	slog.Handler
	cancel context.CancelFunc
	delay  chan time.Duration
}

func (delayHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h delayHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "in" {
			select {
			case h.delay <- a.Value.Duration():
			default:
			}
			h.cancel()
		}
		return true
	})
	return nil
}

func TestRetryAfterIsHonoured(t *testing.T) {
	tests := []struct {
		name, retryAfter string
		min, max         time.Duration
	}{
		{"seconds", "7", 7 * time.Second, 7 * time.Second},
		{"capped", "86400", time.Hour, time.Hour},
		{"garbage: the jittered backoff", "soon", time.Millisecond / 2, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLog()
			f.busy, f.retryAfter = 1, tt.retryAfter
			srv := httptest.NewServer(f)
			defer srv.Close()
			ops, _ := logclient.NewHTTPOps(srv.URL, nil, "")
			v, _ := c2sp.NewProofVerifier(f.log.VKey, nil)
			ctx, cancel := context.WithCancel(t.Context())
			h := delayHandler{Handler: slog.DiscardHandler, cancel: cancel, delay: make(chan time.Duration, 1)}
			c, _ := logclient.New(ops, logclient.Config{Verifier: v, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Logger: slog.New(h)})
			if _, err := c.Add(ctx, []byte("entry")); !errors.Is(err, context.Canceled) {
				t.Fatalf("Add = %v, want canceled while waiting", err)
			}
			if got := <-h.delay; got < tt.min || got > tt.max {
				t.Errorf("after Retry-After: %s the client waits %v, want %v to %v", tt.retryAfter, got, tt.min, tt.max)
			}
		})
	}
}

func TestSubmit(t *testing.T) {
	f := newFakeLog()
	f.busy = 5
	c := newClient(t, f)
	entries := make([][]byte, 50)
	for i := range entries {
		entries[i] = []byte{'e', byte(i)}
	}
	entries[7] = []byte("reject 7")
	var mu sync.Mutex
	calls := make(map[int]int)
	var rejected []int
	err := c.Submit(t.Context(), entries, func(i int, p *logclient.Proof, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls[i]++
		switch {
		case errors.Is(err, logclient.ErrRejected):
			rejected = append(rejected, i)
		case err != nil:
			t.Errorf("entry %d: %v", i, err)
		case p.Verified.Index != f.indexOf(entries[i]):
			t.Errorf("entry %d: index %d, want %d", i, p.Verified.Index, f.indexOf(entries[i]))
		}
	})
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	for i := range entries {
		if calls[i] != 1 {
			t.Errorf("Submit called done %d times for entry %d, want 1", calls[i], i)
		}
	}
	if len(rejected) != 1 || rejected[0] != 7 {
		t.Errorf("Submit rejected %v, want [7]", rejected)
	}
}

func TestSubmitCancelled(t *testing.T) {
	f := newFakeLog()
	c := newClient(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n := 0
	err := c.Submit(ctx, [][]byte{[]byte("a"), []byte("b")}, func(i int, p *logclient.Proof, err error) {
		n++
		if !errors.Is(err, context.Canceled) {
			t.Errorf("entry %d: %v, want canceled", i, err)
		}
	})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("Submit with a cancelled context = %v after %d calls, want canceled after 2", err, n)
	}
}

func TestStatusError(t *testing.T) {
	tests := []struct {
		status    int
		temporary bool
	}{
		{400, false}, {401, false}, {403, false}, {404, false}, {413, false}, {422, false},
		{429, true}, {500, true}, {502, true}, {503, true}, {504, true},
	}
	for _, tt := range tests {
		e := &logclient.StatusError{Status: tt.status}
		if got := e.Temporary(); got != tt.temporary {
			t.Errorf("StatusError{%d}.Temporary() = %v, want %v", tt.status, got, tt.temporary)
		}
		if got := errors.Is(e, logclient.ErrRejected); got == tt.temporary {
			t.Errorf("errors.Is(StatusError{%d}, ErrRejected) = %v, want %v", tt.status, got, !tt.temporary)
		}
	}
}
