package log

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// serverErrorHeaders follows the status line of every answer that net/http
// writes on the connection itself when it cannot read a request (a
// malformed request line or header, headers over MaxHeaderBytes, an
// unsupported Transfer-Encoding or protocol version), in a single write:
// "HTTP/1.1 <status line>" serverErrorHeaders "<text>". No answer of a
// handler has it: those carry Date and a length between the two headers.
const serverErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// expectationFailed starts the answer net/http gives, through the usual
// response path but before any handler runs, to a request with an Expect
// header other than 100-continue. No handler of the log answers 417.
const expectationFailed = "HTTP/1.1 417 Expectation Failed\r\n"

// jsonServerError returns the JSON error answer (DESIGN §3.5) that replaces
// p, if p is one of net/http's own error answers, so that every answer of
// the log is the documented JSON.
func jsonServerError(p []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(proto)) || len(p) < len(proto)+3 {
		return nil, false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	var msg string
	if line, text, ok := bytes.Cut(p, []byte(serverErrorHeaders)); ok && !bytes.Contains(line, []byte("\r\n")) {
		msg = string(text)
	} else if bytes.HasPrefix(p, []byte(expectationFailed)) && bytes.HasSuffix(p, []byte("\r\n\r\n")) {
		msg = "only Expect: 100-continue is supported"
	} else {
		return nil, false
	}
	code := "bad_request"
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		code = "headers_too_large"
	case http.StatusNotImplemented:
		code = "not_implemented"
	case http.StatusHTTPVersionNotSupported:
		code = "http_version_not_supported"
	case http.StatusExpectationFailed:
		code = "expectation_failed"
	}
	body, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, msg})
	body = append(body, '\n')
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		status, http.StatusText(status), len(body))
	b.Write(body)
	return b.Bytes(), true
}
