package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/docketlog/docket/log/logtest"
)

// TestEveryAnswerIsJSON sends the binary requests of every kind that is
// not a well-formed read or write (unknown paths and methods, CONNECT,
// OPTIONS, TRACE, non-canonical paths, HTTP/1.0, declared and chunked
// bodies over the limit, bodies of other media types, and requests net/http
// refuses before any handler runs) and checks that each answer is the
// documented JSON error (DESIGN §3.5), with Allow on 405.
func TestEveryAnswerIsJSON(t *testing.T) {
	tl := newTestLog(t)
	tl.start(t, "-max-checkpoint-age", "1h")
	chunk := "8000\r\n" + strings.Repeat("a", 0x8000) + "\r\n"
	tests := []struct {
		name   string
		req    string
		status int
		code   string
		allow  string
	}{
		{"unknown path", "GET /nope HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"root", "GET / HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"HEAD unknown path", "HEAD /nope HTTP/1.1\r\nHost: log\r\n\r\n", 404, "", ""},
		{"dot segment", "GET /./checkpoint HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"double slash", "GET //checkpoint HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"dot-dot", "GET /tile/../checkpoint HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"tile without slash", "GET /tile HTTP/1.1\r\nHost: log\r\n\r\n", 404, "not_found", ""},
		{"GET /add", "GET /add HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "POST"},
		{"PUT /add", "PUT /add HTTP/1.1\r\nHost: log\r\nContent-Length: 0\r\n\r\n", 405, "method_not_allowed", "POST"},
		{"DELETE /checkpoint", "DELETE /checkpoint HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "GET, HEAD"},
		{"made-up method", "BREW /health HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "GET, HEAD"},
		{"OPTIONS /add", "OPTIONS /add HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "POST"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "GET, HEAD, POST"},
		{"TRACE /checkpoint", "TRACE /checkpoint HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "GET, HEAD"},
		{"CONNECT authority", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 405, "method_not_allowed", "GET, HEAD, POST"},
		{"CONNECT path", "CONNECT /add HTTP/1.1\r\nHost: log\r\n\r\n", 405, "method_not_allowed", "GET, HEAD, POST"},
		{"HTTP/1.0 wrong method", "GET /add HTTP/1.0\r\n\r\n", 405, "method_not_allowed", "POST"},
		{"HTTP/1.0 malformed entry", "POST /add HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", 400, "malformed_entry", ""},
		{"10 GB Content-Length", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Length: 10000000000\r\n\r\n", 413, "entry_too_large", ""},
		{"10 GB Content-Length elsewhere", "POST /checkpoint HTTP/1.1\r\nHost: log\r\nContent-Length: 10000000000\r\n\r\n", 413, "entry_too_large", ""},
		{"chunked over the limit", "POST /add HTTP/1.1\r\nHost: log\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat(chunk, 3), 413, "entry_too_large", ""},
		{"form body", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2", 400, "malformed_entry", ""},
		{"bad Content-Type", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Type: ;;\r\nContent-Length: 5\r\n\r\nhello", 400, "malformed_entry", ""},
		{"multipart body", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 32\r\n\r\n--x\r\nContent-Type: a\r\n\r\nb\r\n--x--", 400, "malformed_entry", ""},
		{"no Host", "GET /checkpoint HTTP/1.1\r\n\r\n", 400, "bad_request", ""},
		{"garbage request line", "HELLO\r\n\r\n", 400, "bad_request", ""},
		{"bad header", "GET /checkpoint HTTP/1.1\r\nHost: log\r\nno colon\r\n\r\n", 400, "bad_request", ""},
		{"bad Content-Length", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Length: -1\r\n\r\n", 400, "bad_request", ""},
		{"headers too large", "GET /checkpoint HTTP/1.1\r\nHost: log\r\nX-Big: " + strings.Repeat("a", 32<<10) + "\r\n\r\n", 431, "headers_too_large", ""},
		{"unsupported Transfer-Encoding", "POST /add HTTP/1.1\r\nHost: log\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "not_implemented", ""},
		{"HTTP/2.0 request line", "GET /checkpoint HTTP/2.0\r\nHost: log\r\n\r\n", 505, "http_version_not_supported", ""},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 405, "method_not_allowed", "GET, HEAD, POST"},
		{"HTTP/0.9", "GET /checkpoint\r\n\r\n", 400, "bad_request", ""},
		{"Content-Length and chunked", "POST /add HTTP/1.1\r\nHost: log\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "malformed_entry", ""},
		{"Expect", "POST /add HTTP/1.1\r\nHost: log\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417, "expectation_failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawRequest(t, tl.addr, tt.req)
			if resp.StatusCode != tt.status {
				t.Errorf("%q = %d %s, want %d", tt.req[:min(len(tt.req), 60)], resp.StatusCode, body, tt.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%q: Content-Type = %q, want application/json", tt.name, ct)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("%q: Allow = %q, want %q", tt.name, got, tt.allow)
			}
			if tt.code == "" { // HEAD: no body
				return
			}
			var e map[string]any
			if err := json.Unmarshal(body, &e); err != nil || len(e) != 2 || e["error"] != tt.code || e["message"] == "" {
				t.Errorf("%q: body = %s, want {\"error\": %q, \"message\": …}", tt.name, body, tt.code)
			}
		})
	}
}

// TestEveryMethodAndPath sends every method to every kind of path and
// checks that each answer is JSON, except the tlog-tiles resources and the
// proofs, whose formats are their own.
func TestEveryMethodAndPath(t *testing.T) {
	tl := newTestLog(t)
	p := tl.start(t, "-max-checkpoint-age", "1h")
	if r := mustPost(t, p.url, newIssuer().entry(t, "matrix", 1)); r.status != 200 {
		t.Fatalf("POST /add = %d %s", r.status, r.body)
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "BREW"}
	paths := []string{"/", "/add", "/add/", "/checkpoint", "/checkpoint/", "/health", "/tile", "/tile/",
		"/tile/0/000.p/1", "/tile/entries/000.p/1", "/tile/0/001", "/tile/0/x000/000", "/tile/entries/", "/nope",
		"//add", "/./health", "/tile/0/../../health", "/%2e%2e/health", "/add?x=1", "/health#x"}
	for _, m := range methods {
		for _, path := range paths {
			req := m + " " + path + " HTTP/1.1\r\nHost: log\r\nContent-Length: 0\r\n\r\n"
			resp, body := rawRequest(t, tl.addr, req)
			ct := resp.Header.Get("Content-Type")
			if resp.StatusCode == 200 && (m == "GET" || m == "HEAD") && strings.HasPrefix(path, "/tile/") {
				if ct != "application/octet-stream" {
					t.Errorf("%s %s = 200 %q, want application/octet-stream", m, path, ct)
				}
				continue
			}
			if resp.StatusCode == 200 && (m == "GET" || m == "HEAD") && path == "/checkpoint" {
				continue
			}
			if ct != "application/json" {
				t.Errorf("%s %s = %d %q %q, want application/json", m, path, resp.StatusCode, ct, body)
				continue
			}
			var e map[string]any
			if m != "HEAD" && json.Unmarshal(body, &e) != nil {
				t.Errorf("%s %s = %d %q, want a JSON body", m, path, resp.StatusCode, body)
			}
			if resp.StatusCode >= 400 && m != "HEAD" && (e["error"] == nil || e["message"] == nil || len(e) != 2) {
				t.Errorf("%s %s = %d %s, want {\"error\", \"message\"}", m, path, resp.StatusCode, body)
			}
			if resp.StatusCode == 405 && resp.Header.Get("Allow") == "" {
				t.Errorf("%s %s = 405 without Allow", m, path)
			}
			if resp.StatusCode >= 300 && resp.StatusCode < 400 {
				t.Errorf("%s %s = %d, want no redirect", m, path, resp.StatusCode)
			}
		}
	}
}

// rawRequest sends req as it is on a new connection to addr (the body
// written while the answer is read) and returns the answer.
func rawRequest(t *testing.T, addr, req string) (*http.Response, []byte) {
	t.Helper()
	c := logtest.Dial(t, addr)
	defer c.Close()
	go io.WriteString(c, req) // fails once the server has closed the connection
	method, _, _ := strings.Cut(req, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: reading the answer: %v", req[:min(len(req), 60)], err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
