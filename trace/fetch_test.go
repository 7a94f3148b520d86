package trace_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/hostiletest"
	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/trace"
)

// TestFetchFileChosenByTheRecord is the attack of issue 20 §5 on file URLs:
// a record names what the verifier reads, so /dev/zero, a link to it, a FIFO
// (whose open would block forever), a directory and a file over the limit
// are refused before anything is read.
func TestFetchFileChosenByTheRecord(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 101), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	f := &trace.Fetcher{}
	file := func(p string) string { return "file://" + filepath.ToSlash(p) }
	tests := []struct {
		name, uri string
		err       error // nil: reads "[]"; errAny: some error
	}{
		{"regular file", file(filepath.Join(dir, "ok")), nil},
		{"localhost", "file://localhost" + filepath.ToSlash(filepath.Join(dir, "ok")), nil},
		{"/dev/zero", "file:///dev/zero", safefile.ErrNotRegular},
		{"link to /dev/zero", file(filepath.Join(dir, "zero")), safefile.ErrNotRegular},
		{"FIFO", file(filepath.Join(dir, "fifo")), safefile.ErrNotRegular},
		{"directory", file(dir), safefile.ErrNotRegular},
		{"over the limit", file(filepath.Join(dir, "big")), safefile.ErrTooLarge},
		{"another host", "file://example.org" + filepath.ToSlash(filepath.Join(dir, "ok")), errAny},
		{"relative", "file:ok", errAny},
		{"missing", file(filepath.Join(dir, "nope")), os.ErrNotExist},
		{"another scheme", "ftp://example.org/t.json", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := f.Fetch(t.Context(), tt.uri, 100)
			checkFetch(t, tt.uri, b, err, tt.err)
		})
	}
}

var errAny = errors.New("any error")

func checkFetch(t *testing.T, uri string, b []byte, err, want error) {
	t.Helper()
	switch {
	case want == nil && (err != nil || string(b) != "[]"):
		t.Fatalf("Fetch(%s) = %.40q, %v; want \"[]\"", uri, b, err)
	case want == errAny && err == nil:
		t.Fatalf("Fetch(%s) = %.40q, want an error", uri, b)
	case want != nil && want != errAny && !errors.Is(err, want):
		t.Fatalf("Fetch(%s) = %.40q, %v; want %v", uri, b, err, want)
	}
}

// TestFetchHTTPChosenByTheRecord is the attack of issue 20 §5 on http
// URLs, against real servers on loopback: bodies over the limit (declared
// or not, endless, or a gzip bomb), encodings that were not asked for,
// redirect loops and redirects out of http, a header that never ends, and
// servers that drip their answer or never send it, all end in an error
// within the fetch's deadline.
func TestFetchHTTPChosenByTheRecord(t *testing.T) {
	srv := hostiletest.NewServer(t)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == hostiletest.OK {
			fmt.Fprint(w, "[]")
			return
		}
		http.Redirect(w, r, srv.URL+hostiletest.OK, http.StatusFound)
	}))
	defer tlsSrv.Close()

	tests := []struct {
		name, uri string
		limit     int64
		transport http.RoundTripper
		err       error
	}{
		{"ok", srv.URL + hostiletest.OK, 100, nil, nil},
		{"not found", srv.URL + hostiletest.Missing, 100, nil, errAny},
		{"declared too large", srv.URL + hostiletest.Declared, 100, nil, safefile.ErrTooLarge},
		{"endless", srv.URL + hostiletest.Endless, 1 << 20, nil, safefile.ErrTooLarge},
		{"gzip bomb", srv.URL + hostiletest.GzipBomb, 1 << 20, nil, safefile.ErrTooLarge},
		{"gzip", srv.URL + hostiletest.GzipOK, 100, nil, nil},
		{"encoding not asked for", srv.URL + hostiletest.Brotli, 100, nil, errAny},
		{"gzip twice", srv.URL + hostiletest.DoubleGzip, 100, nil, errAny},
		{"five redirects", srv.URL + hostiletest.Hops + "4", 100, nil, nil},
		{"redirect loop", srv.URL + hostiletest.Loop, 100, nil, errAny},
		{"six redirects", srv.URL + hostiletest.Hops + "5", 100, nil, errAny},
		{"redirect to a file", srv.URL + hostiletest.ToFile, 100, nil, errAny},
		{"header too large", srv.URL + hostiletest.HugeHeader, 100, nil, errAny},
		{"https", tlsSrv.URL + hostiletest.OK, 100, tlsSrv.Client().Transport, nil},
		{"redirect from https to http", tlsSrv.URL + "/down", 100, tlsSrv.Client().Transport, errAny},
		// A slow loris sends a byte every 20 ms: the 100-byte limit alone
		// would take 2 s to reach.
		{"slow loris", srv.URL + hostiletest.Drip, 100, nil, context.DeadlineExceeded},
		{"no answer", srv.URL + hostiletest.Silent, 100, nil, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &trace.Fetcher{Transport: tt.transport, Timeout: 300 * time.Millisecond}
			if tt.err != context.DeadlineExceeded {
				f.Timeout = time.Minute // only the deadline cases may end by it
			}
			b, err := f.Fetch(t.Context(), tt.uri, tt.limit)
			checkFetch(t, tt.uri, b, err, tt.err)
		})
	}
}

func TestLimitsOf(t *testing.T) {
	two := 2
	transcript := []byte(`[{"call_index":0,"tool_name":"Bash","started_at":"t","decision":"deny"}]`)
	perReceipt := int64(receipts.MaxEntrySize + 1)
	tests := []struct {
		name       string
		tt         *trace.ToolTranscript
		transcript []byte
		want       trace.Limits
	}{
		{"two calls", &trace.ToolTranscript{Hash: "sha256:00", CallCount: &two}, nil,
			trace.Limits{Transcript: 2 + 2*trace.TranscriptBytesPerCall, Chain: (trace.ExtraReceipts + 4) * perReceipt, Proof: trace.MaxProofBytes}},
		{"no transcript", nil, nil,
			trace.Limits{Transcript: receipts.MaxDocumentSize, Chain: trace.ExtraReceipts * perReceipt, Proof: trace.MaxProofBytes}},
		{"no call count: the committed transcript's calls", &trace.ToolTranscript{Hash: trace.Digest(transcript)}, transcript,
			trace.Limits{Transcript: receipts.MaxDocumentSize, Chain: (trace.ExtraReceipts + 2) * perReceipt, Proof: trace.MaxProofBytes}},
		{"no call count: another transcript counts for nothing", &trace.ToolTranscript{Hash: "sha256:00"}, transcript,
			trace.Limits{Transcript: receipts.MaxDocumentSize, Chain: trace.ExtraReceipts * perReceipt, Proof: trace.MaxProofBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trace.LimitsOf(&trace.Record{ToolTranscript: tt.tt}, tt.transcript); got != tt.want {
				t.Fatalf("LimitsOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
