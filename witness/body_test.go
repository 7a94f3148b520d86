package witness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOversizeBody: a body whose Content-Length claims more than the limit
// (10 GB, say) is answered 413 at once, on every path, without the witness
// reading any of it: the client sends only the headers and still gets its
// answer (and, for a body too large to drain, the connection is then
// closed). A chunked body is cut off at the limit as it is read.
func TestOversizeBody(t *testing.T) {
	l := newTestLog(t, "example.com/oversize")
	w := newTestWitness(t, Config{MaxBodySize: 4096}, l)
	srv := httptest.NewServer(w)
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	tests := []struct {
		name, method, path string
		length             int64
		closed             bool // net/http drains up to 256 KiB of a body to keep the connection
	}{
		{"10 GB add-checkpoint", "POST", "/add-checkpoint", 10_000_000_000, true},
		{"limit+1 add-checkpoint", "POST", "/add-checkpoint", 4097, false},
		{"10 GB on health", "GET", "/health", 10_000_000_000, true},
		{"10 GB on an unknown path", "PUT", "/nope", 10_000_000_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: w\r\nContent-Length: %d\r\n\r\n", tt.method, tt.path, tt.length)
			status, closed := rawRequest(t, addr, head, nil, tt.closed)
			if status != http.StatusRequestEntityTooLarge || closed != tt.closed {
				t.Errorf("%s %s with Content-Length %d and no body = %d (connection closed %v), want 413 (closed %v)",
					tt.method, tt.path, tt.length, status, closed, tt.closed)
			}
		})
	}

	t.Run("chunked over the limit", func(t *testing.T) {
		head := "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nTransfer-Encoding: chunked\r\n\r\n"
		chunk := fmt.Sprintf("%x\r\n%s\r\n", 1024, strings.Repeat("a", 1024))
		status, _ := rawRequest(t, addr, head, strings.NewReader(strings.Repeat(chunk, 64)), false)
		if status != http.StatusRequestEntityTooLarge {
			t.Errorf("POST /add-checkpoint with 64 KiB chunked = %d, want 413", status)
		}
	})

	// Under the limit, the witness still answers as before.
	if got := post(t, w, l.request(t, 0, 3)); got.status != http.StatusOK {
		t.Errorf("Add(old 0, size 3) = %d %q, want 200", got.status, got.body)
	}
}

// rawRequest sends head on a new connection to addr, then body (if any)
// while it reads the answer, and returns the status code answered (0 if
// none) and, if waitClose, whether the server then closed the connection.
func rawRequest(t *testing.T, addr, head string, body io.Reader, waitClose bool) (status int, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A guard against a hanging test, not an assertion about time.
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		go io.Copy(c, body) // fails once the server has closed the connection
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !waitClose {
		return resp.StatusCode, false
	}
	_, err = br.ReadByte()
	return resp.StatusCode, err == io.EOF || errorIsReset(err)
}

// errorIsReset reports whether err is the connection reset that follows a
// server closing a connection it had not read to the end.
func errorIsReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}
