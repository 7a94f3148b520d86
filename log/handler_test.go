package log

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/transparency-dev/tessera/api"
)

// TestErrorsAreJSON checks that every error answer, unknown paths and
// wrong methods included, is the documented JSON and names no file path.
func TestErrorsAreJSON(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, func(c *Config) { c.MaxCheckpointAge = time.Nanosecond })
		defer l.Close(context.Background())
		srv := httptest.NewServer(l.Handler())
		defer srv.Close()
		tests := []struct {
			method, path string
			status       int
			code         string
		}{
			{"GET", "/nope", 404, codeNotFound},
			{"GET", "/", 404, codeNotFound},
			{"GET", "/add", 405, codeMethod},
			{"PUT", "/add", 405, codeMethod},
			{"POST", "/checkpoint", 405, codeMethod},
			{"DELETE", "/tile/0/000", 405, codeMethod},
			{"POST", "/health", 405, codeMethod},
			{"GET", "/tile/0/999", 404, codeNotFound},
			{"GET", "/tile/0/0001", 404, codeNotFound},
			{"GET", "/tile/entries/x", 404, codeNotFound},
			{"GET", "/health", 503, codeStale},
			{"OPTIONS", "/add", 405, codeMethod},
			{"TRACE", "/checkpoint", 405, codeMethod},
			{"BREW", "/health", 405, codeMethod},
			{"GET", "/./checkpoint", 404, codeNotFound},
			{"GET", "/tile/../checkpoint", 404, codeNotFound},
			{"GET", "/tile", 404, codeNotFound},
		}
		for _, tt := range tests {
			t.Run(tt.method+" "+tt.path, func(t *testing.T) {
				req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				var e struct{ Error, Message string }
				if resp.StatusCode != tt.status || json.Unmarshal(b, &e) != nil || e.Error != tt.code || e.Message == "" {
					t.Errorf("%s %s = %d %s, want %d with JSON error %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.code)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("%s %s Content-Type = %q, want application/json", tt.method, tt.path, ct)
				}
				if strings.Contains(string(b), dir) || strings.Contains(string(b), "/tmp") {
					t.Errorf("%s %s = %s, names a file system path", tt.method, tt.path, b)
				}
			})
		}
	})
}

// rawAdd sends head and body on a new connection to srv, closes the
// sending side if closeWrite, and returns the status line answered, or ""
// if the server closed the connection without an answer.
func rawAdd(t *testing.T, addr, head, body string, closeWrite bool) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A guard against a hanging test, not an assertion about time.
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSpace(line)
}

// TestAddBody checks POST /add against bodies that are too long, cut short
// or too slow: each gets an error answer or a closed connection, never a
// 200 without a proof (issue 10 §5).
func TestAddBody(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, nil)
		defer l.Close(context.Background())
		srv := httptest.NewUnstartedServer(l.Handler())
		srv.Config.ReadTimeout = 200 * time.Millisecond
		srv.Start()
		defer srv.Close()
		addr := srv.Listener.Addr().String()
		head := func(n int64) string {
			return "POST /add HTTP/1.1\r\nHost: log\r\nContent-Length: " + strconv.FormatInt(n, 10) + "\r\n\r\n"
		}

		// Over the limit: 413 before any of the body is sent.
		if got := rawAdd(t, addr, head(10_000_000_000), "", false); !strings.HasPrefix(got, "HTTP/1.1 413") {
			t.Errorf("POST /add with Content-Length 1e10 and no body = %q, want 413 at once", got)
		}
		if got := rawAdd(t, addr, head(receipts.MaxEntrySize+1), "", false); !strings.HasPrefix(got, "HTTP/1.1 413") {
			t.Errorf("POST /add with Content-Length limit+1 and no body = %q, want 413 at once", got)
		}
		// Cut short: the client sends part of the body and closes its side.
		if got := rawAdd(t, addr, head(1000), `{"public_key":`, true); got != "" && !strings.HasPrefix(got, "HTTP/1.1 400") {
			t.Errorf("POST /add with a body cut short = %q, want 400 or a closed connection", got)
		}
		// Too slow: the body never comes, and the server's read times out.
		if got := rawAdd(t, addr, head(1000), `{"public_key":`, false); got != "" && !strings.HasPrefix(got, "HTTP/1.1 400") {
			t.Errorf("POST /add with a stalled body = %q, want 400 or a closed connection", got)
		}
	})
}

// TestPartialTiles checks that a partial tile or entry bundle of width W
// holds exactly W hashes or entries once the tree has grown past it (they
// are served as immutable).
func TestPartialTiles(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, nil)
		defer l.Close(context.Background())
		srv := httptest.NewServer(l.Handler())
		defer srv.Close()
		priv, _ := receipts.GenerateKey()
		for round, n := range []int{3, 4} {
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if _, err := l.Add(t.Context(), testEntry(t, priv, fmt.Sprint(round), int64(i+1))); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
		}
		get := func(p string) []byte {
			resp, err := http.Get(srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d %s", p, resp.StatusCode, b)
			}
			return b
		}
		if b := get("/tile/0/000.p/3"); len(b) != 3*32 {
			t.Errorf("GET /tile/0/000.p/3 = %d bytes, want %d", len(b), 3*32)
		}
		var eb api.EntryBundle
		if err := eb.UnmarshalText(get("/tile/entries/000.p/3")); err != nil || len(eb.Entries) != 3 {
			t.Errorf("GET /tile/entries/000.p/3 = %d entries, %v; want 3", len(eb.Entries), err)
		}
	})
}
