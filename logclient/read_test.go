package logclient_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/transparency-dev/tessera/api/layout"
	tclient "github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/logclient"
)

// A Client reads a log as audit.Fetcher asks, so the auditor, the monitor
// and the explorer can read through it.
var _ audit.Fetcher = (*logclient.Client)(nil)

// TestDirOps reads a real Tessera POSIX log through a Client and through
// Tessera's own FileFetcher, and wants the same bytes.
func TestDirOps(t *testing.T) {
	dir := t.TempDir()
	k := tlogtest.NewKeyPair(t, "example.com/posix")
	pl := tlogtest.NewPOSIX(t, dir, k)
	var leaves [][]byte
	for i := range 300 { // a full bundle and a partial one of 44
		leaves = append(leaves, fmt.Appendf(nil, "entry %d", i))
	}
	pl.Add(t, leaves...)
	v, err := c2sp.NewProofVerifier(k.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := logclient.New(logclient.NewDirOps(dir), logclient.Config{Verifier: v})
	if err != nil {
		t.Fatal(err)
	}
	ff := tclient.FileFetcher{Root: dir}
	ctx := t.Context()
	_, cp, err := c.Checkpoint(ctx)
	if err != nil || cp.Size != 300 {
		t.Fatalf("Checkpoint() = %+v, %v; want size 300", cp, err)
	}
	tests := []struct {
		name string
		got  func() ([]byte, error)
		want func() ([]byte, error)
	}{
		{"full tile", func() ([]byte, error) { return c.ReadTile(ctx, 0, 0, 0) }, func() ([]byte, error) { return ff.ReadTile(ctx, 0, 0, 0) }},
		{"partial tile", func() ([]byte, error) { return c.ReadTile(ctx, 0, 1, 44) }, func() ([]byte, error) { return ff.ReadTile(ctx, 0, 1, 44) }},
		{"full bundle", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 0, 0) }, func() ([]byte, error) { return ff.ReadEntryBundle(ctx, 0, 0) }},
		{"partial bundle", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 1, 44) }, func() ([]byte, error) { return ff.ReadEntryBundle(ctx, 1, 44) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			want, err := tt.want()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Client read %d bytes, FileFetcher %d (%v): want the same", len(got), len(want), err)
			}
		})
	}
	if _, err := c.ReadEntryBundle(ctx, 2, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadEntryBundle past the log = %v, want ErrNotExist", err)
	}
	if _, err := logclient.NewDirOps(dir).ReadRemote(ctx, "../x", 10); err == nil {
		t.Errorf("DirOps.ReadRemote(../x) = nil error, want a refusal")
	}
	if _, err := c.Add(ctx, []byte("x")); !errors.Is(err, logclient.ErrRejected) {
		t.Errorf("Add to a storage directory = %v, want ErrRejected", err)
	}
}

// mapOps serves fixed resources; a missing one is fs.ErrNotExist.
type mapOps map[string][]byte

func (m mapOps) ReadRemote(_ context.Context, path string, limit int64) ([]byte, error) {
	b, ok := m[path]
	if !ok {
		return nil, fs.ErrNotExist
	}
	if int64(len(b)) > limit {
		return nil, logclient.ErrTooLarge
	}
	return b, nil
}

func (mapOps) Add(context.Context, []byte, int64) ([]byte, error) { return nil, logclient.ErrRejected }

// bundle returns an entry bundle of n entries of the given size.
func bundle(n, size int) []byte {
	var b []byte
	for range n {
		b = binary.BigEndian.AppendUint16(b, uint16(size))
		b = append(b, bytes.Repeat([]byte{'x'}, size)...)
	}
	return b
}

func TestReadChecks(t *testing.T) {
	l := tlogtest.New("example.com/log")
	v, _ := c2sp.NewProofVerifier(l.VKey, nil)
	other := tlogtest.New("example.com/log")
	ops := mapOps{
		layout.TilePath(0, 0, 0): make([]byte, 8192),
		layout.TilePath(0, 1, 5): make([]byte, 5*32),
		layout.TilePath(0, 2, 5): make([]byte, 6*32),
		layout.TilePath(0, 3, 0): make([]byte, 8191),
		layout.TilePath(0, 4, 0): make([]byte, 8192), // its partial is gone
		layout.EntriesPath(0, 0): bundle(256, 10),
		layout.EntriesPath(1, 3): bundle(3, 65535),
		layout.EntriesPath(2, 3): bundle(4, 1),
		layout.EntriesPath(3, 3): bundle(2, 1),
		layout.EntriesPath(4, 3): bundle(3, 5)[:20],
		layout.EntriesPath(5, 0): bundle(257, 0),
		layout.EntriesPath(6, 0): bundle(256, 0), // its partial is gone
		layout.EntriesPath(7, 0): make([]byte, logclient.MaxBundleSize+1),
	}
	ops[layout.CheckpointPath] = other.Checkpoint(3) // same origin, another key
	c, _ := logclient.New(ops, logclient.Config{Verifier: v})
	ctx := t.Context()
	tests := []struct {
		name    string
		read    func() ([]byte, error)
		wantErr error
	}{
		{"full tile", func() ([]byte, error) { return c.ReadTile(ctx, 0, 0, 0) }, nil},
		{"partial tile", func() ([]byte, error) { return c.ReadTile(ctx, 0, 1, 5) }, nil},
		{"partial tile too long", func() ([]byte, error) { return c.ReadTile(ctx, 0, 2, 5) }, logclient.ErrMalformed},
		{"full tile cut short", func() ([]byte, error) { return c.ReadTile(ctx, 0, 3, 0) }, logclient.ErrMalformed},
		{"partial tile gone: the full one", func() ([]byte, error) { return c.ReadTile(ctx, 0, 4, 9) }, nil},
		{"no such tile", func() ([]byte, error) { return c.ReadTile(ctx, 0, 9, 0) }, fs.ErrNotExist},
		{"full bundle", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 0, 0) }, nil},
		{"partial bundle of the largest entries", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 1, 3) }, nil},
		{"more entries than its width", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 2, 3) }, logclient.ErrMalformed},
		{"fewer entries than its width", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 3, 3) }, logclient.ErrMalformed},
		{"an entry cut short", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 4, 3) }, logclient.ErrMalformed},
		{"257 entries", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 5, 0) }, logclient.ErrMalformed},
		{"partial bundle gone: the full one", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 6, 7) }, nil},
		{"larger than any bundle", func() ([]byte, error) { return c.ReadEntryBundle(ctx, 7, 0) }, logclient.ErrTooLarge},
		{"checkpoint under another key", func() ([]byte, error) { b, _, err := c.Checkpoint(ctx); return b, err }, c2sp.ErrCheckpointSig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.read()
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("read = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestHTTPReadBounds serves resources over HTTP, gzip-compressed when the
// client accepts it, and wants every one bounded after decompression.
func TestHTTPReadBounds(t *testing.T) {
	l := tlogtest.New("example.com/log")
	cp := l.Checkpoint(5)
	full := bundle(256, 100)
	bomb := make([]byte, logclient.MaxBundleSize+1) // compresses to ~16 KiB
	serve := map[string][]byte{
		"/checkpoint":       cp,
		"/tile/entries/000": full,
		"/tile/entries/001": bomb,
		"/tile/0/000":       make([]byte, 8192),
	}
	var gzipped int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := serve[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Accept-Encoding") == "gzip" {
			gzipped++
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(b)
			zw.Close()
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	ops, err := logclient.NewHTTPOps(srv.URL+"/", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := c2sp.NewProofVerifier(l.VKey, nil)
	c, _ := logclient.New(ops, logclient.Config{Verifier: v})
	ctx := t.Context()
	if got, _, err := c.Checkpoint(ctx); err != nil || !bytes.Equal(got, cp) {
		t.Errorf("Checkpoint() = %q, %v; want the log's", got, err)
	}
	if got, err := c.ReadEntryBundle(ctx, 0, 0); err != nil || !bytes.Equal(got, full) {
		t.Errorf("ReadEntryBundle(0) = %d bytes, %v; want the %d served", len(got), err, len(full))
	}
	if _, err := c.ReadEntryBundle(ctx, 1, 0); !errors.Is(err, logclient.ErrTooLarge) {
		t.Errorf("ReadEntryBundle of a gzip bomb = %v, want ErrTooLarge", err)
	}
	if _, err := c.ReadTile(ctx, 0, 0, 0); err != nil {
		t.Errorf("ReadTile(0, 0) = %v", err)
	}
	if _, err := c.ReadTile(ctx, 0, 7, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadTile of a missing tile = %v, want ErrNotExist", err)
	}
	if gzipped == 0 {
		t.Errorf("no request asked for gzip")
	}
	if _, err := logclient.NewHTTPOps("ftp://x", nil, ""); err == nil {
		t.Errorf("NewHTTPOps(ftp://x) = nil error, want a refusal")
	}
}

// TestDirOpsRefusesBeforeReading puts what a hostile storage directory
// holds in place of a resource and wants it refused unread: ReadRemote's
// limit is what a partial bundle of width 3 may hold.
func TestDirOpsRefusesBeforeReading(t *testing.T) {
	const limit = 3 * (2 + logclient.MaxEntrySize)
	tests := []struct {
		name    string
		write   func(t *testing.T, path string)
		wantErr error
		want    string // in the error: the refusal came before any read
	}{
		{"sparse file of 64 MiB", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, 64<<20); err != nil {
				t.Fatal(err)
			}
		}, logclient.ErrTooLarge, "67108864 bytes, limit 196611"},
		{"symbolic link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, logclient.ErrMalformed, "not a regular file"},
		{"FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, logclient.ErrMalformed, "not a regular file"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, logclient.ErrMalformed, "not a regular file"},
		{"file of exactly the limit", func(t *testing.T, path string) {
			if err := os.WriteFile(path, make([]byte, limit), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.write(t, filepath.Join(dir, "r"))
			got, err := logclient.NewDirOps(dir).ReadRemote(t.Context(), "r", limit)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Fatalf("ReadRemote = %d bytes, %v; want %v (%q)", len(got), err, tt.wantErr, tt.want)
			}
		})
	}
}

// TestHTTPOpsRefusesDeclaredSize: a body whose Content-Length is over the
// limit (its compressed bound, when gzipped) is refused before it is read.
func TestHTTPOpsRefusesDeclaredSize(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name     string
		encoding string
		length   int
		wantErr  error
	}{
		{"identity over the limit", "", limit + 1, logclient.ErrTooLarge},
		{"identity at the limit", "", limit, nil},
		{"gzip over its compressed bound", "gzip", limit + limit/64 + 1025, logclient.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.encoding != "" {
					w.Header().Set("Content-Encoding", tt.encoding)
				}
				w.Header().Set("Content-Length", strconv.Itoa(tt.length))
				w.Write(make([]byte, tt.length))
			}))
			defer srv.Close()
			ops, err := logclient.NewHTTPOps(srv.URL, srv.Client(), "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := ops.ReadRemote(t.Context(), "r", limit)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("ReadRemote = %d bytes, %v; want %v", len(got), err, tt.wantErr)
			}
			if err == nil && len(got) != tt.length {
				t.Errorf("ReadRemote = %d bytes, want %d", len(got), tt.length)
			}
		})
	}
}
