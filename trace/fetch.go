package trace

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// What the evidence of a record may weigh. The party being verified
// chooses both the record's URIs and the files published next to it: a
// key trusted to identify an issuer does not make what it names benign,
// so every read is bounded by what the record claims.
const (
	// TranscriptBytesPerCall bounds one transcript entry: its hashes,
	// times and decision take about 500 bytes, the rest is the tool name.
	TranscriptBytesPerCall = 4 << 10
	// ReceiptsPerCall is the receipts a call adds to a chain: its
	// decision and its execution.
	ReceiptsPerCall = 2
	// ExtraReceipts bounds the receipts of a chain that are not calls:
	// session starts (also on resume and compaction) and ends.
	ExtraReceipts = 16
	// MaxProofBytes bounds a tlog-proof: a header, an index, at most 63
	// hashes and a checkpoint with its cosignatures take a few KiB.
	MaxProofBytes = 64 << 10
	// DefaultFetchTimeout bounds one fetch.
	DefaultFetchTimeout = 30 * time.Second
)

// Limits are the most bytes each piece of a record's evidence may hold.
type Limits struct {
	Transcript, Chain, Proof int64
}

// LimitsOf returns the limits of the evidence of r. The record's
// tool_transcript.call_count is the claim they follow; a record without
// one is held to the calls of transcript (its bytes, when they hash to the
// value the record commits), or to none. A receipt is at most
// receipts.MaxEntrySize bytes: a larger one could not be logged.
func LimitsOf(r *Record, transcript []byte) Limits {
	l := Limits{Transcript: strictjson.MaxDocumentSize, Proof: MaxProofBytes}
	calls := int64(0)
	if tt := r.ToolTranscript; tt != nil {
		switch {
		case tt.CallCount != nil:
			calls = max(int64(*tt.CallCount), 0)
			l.Transcript = min(strictjson.MaxDocumentSize, 2+calls*TranscriptBytesPerCall)
		case transcript != nil && Digest(transcript) == tt.Hash:
			if c, err := ParseTranscript(transcript); err == nil {
				calls = int64(len(c))
			}
		}
	}
	l.Chain = (ExtraReceipts + calls*ReceiptsPerCall) * (receipts.MaxEntrySize + 1)
	return l
}

// A Fetcher reads the evidence a record names: file URLs (a regular file
// on this machine) and http and https URLs, each within a byte limit and a
// deadline. A Fetcher is safe for concurrent use.
type Fetcher struct {
	// Transport makes the http and https requests; nil means a clone of
	// http.DefaultTransport. Redirects (at most MaxRedirects, never from
	// https to http) and the limits are the Fetcher's.
	Transport http.RoundTripper
	// Timeout bounds each fetch, from the first byte sent to the last
	// byte read; 0 means DefaultFetchTimeout.
	Timeout time.Duration
}

// MaxRedirects is the most redirects a fetch follows.
const MaxRedirects = 5

// maxHeaderBytes bounds a response's header.
const maxHeaderBytes = 64 << 10

// Fetch returns the bytes at uri, at most max of them:
//
//   - file URLs (file:///path, or file://localhost/path) name a regular
//     file: a FIFO, a device (/dev/zero, or a link to it), a directory or a
//     socket is refused before anything is read, and a file over max bytes
//     too;
//   - http and https URLs are fetched with GET: the status must be 200, a
//     body over max bytes is refused (after decompression: the transport's
//     gzip is undone as it is read, and any other content encoding is
//     refused), redirects are followed at most MaxRedirects times and never
//     from https to http.
//
// The whole fetch ends at the Fetcher's timeout or when ctx is done, so a
// server that drips its answer cannot hold the verifier.
func (f *Fetcher) Fetch(ctx context.Context, uri string, max int64) ([]byte, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" || u.Opaque != "" || u.Path == "" {
			return nil, fmt.Errorf("%s is not a file URL of this machine (file:///absolute/path)", uri)
		}
		return f.ReadFile(ctx, filepath.FromSlash(u.Path), max)
	case "http", "https":
		ctx, cancel := context.WithTimeoutCause(ctx, f.timeout(), fmt.Errorf("fetch took longer than %v: %w", f.timeout(), context.DeadlineExceeded))
		defer cancel()
		return f.get(ctx, u, max)
	}
	return nil, fmt.Errorf("unsupported URL scheme %q (want file, http or https)", u.Scheme)
}

func (f *Fetcher) get(ctx context.Context, u *url.URL, max int64) ([]byte, error) {
	rt := f.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxResponseHeaderBytes = maxHeaderBytes
		rt = t
	}
	client := &http.Client{Transport: rt, CheckRedirect: checkRedirect}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, cause
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Request.URL.Redacted(), resp.Status)
	}
	// The transport asked for gzip and undoes it as the body is read
	// (resp.Uncompressed); an encoding still named was not asked for.
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return nil, fmt.Errorf("%s: content encoding %q is not supported", resp.Request.URL.Redacted(), ce)
	}
	if !resp.Uncompressed && resp.ContentLength > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", resp.Request.URL.Redacted(), safefile.ErrTooLarge, resp.ContentLength, max)
	}
	b, err := safefile.ReadAll(ctx, resp.Body, max)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause
		}
		return nil, fmt.Errorf("%s: %w", resp.Request.URL.Redacted(), err)
	}
	return b, nil
}

// checkRedirect follows at most MaxRedirects redirects, never from https
// to http (the client itself refuses schemes other than http and https).
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("more than %d redirects", MaxRedirects)
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to " + req.URL.Scheme)
	}
	return nil
}

// ReadFile reads the regular file at path, at most max bytes, within the
// Fetcher's timeout: the rule Fetch applies to file URLs, for the files a
// verifier is handed (a record, and the evidence published next to it).
func (f *Fetcher) ReadFile(ctx context.Context, path string, max int64) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, f.timeout(), fmt.Errorf("read took longer than %v: %w", f.timeout(), context.DeadlineExceeded))
	defer cancel()
	return safefile.Read(ctx, path, max)
}

func (f *Fetcher) timeout() time.Duration {
	if f.Timeout <= 0 {
		return DefaultFetchTimeout
	}
	return f.Timeout
}
