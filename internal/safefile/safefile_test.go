package safefile_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/safefile"
)

// files makes, in a temporary directory, one file of each kind a party
// being verified can name instead of a small regular file.
func files(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, size int) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok", 10)
	write("big", 11)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"zero": "/dev/zero", "to-ok": "ok", "to-fifo": "fifo", "escape": "/etc/hostname", "up": "../x"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Unix socket paths are short: listen in a directory of their own.
	sdir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	l, err := net.Listen("unix", filepath.Join(sdir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Symlink(filepath.Join(sdir, "s"), filepath.Join(dir, "socket")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRead(t *testing.T) {
	dir := files(t)
	tests := []struct {
		name string
		path string
		err  error // nil: reads 10 bytes
	}{
		{"regular file", filepath.Join(dir, "ok"), nil},
		{"symlink to a regular file", filepath.Join(dir, "to-ok"), nil},
		{"over the limit", filepath.Join(dir, "big"), safefile.ErrTooLarge},
		{"FIFO", filepath.Join(dir, "fifo"), safefile.ErrNotRegular},
		{"symlink to a FIFO", filepath.Join(dir, "to-fifo"), safefile.ErrNotRegular},
		{"/dev/zero", "/dev/zero", safefile.ErrNotRegular},
		{"symlink to /dev/zero", filepath.Join(dir, "zero"), safefile.ErrNotRegular},
		{"/dev/urandom", "/dev/urandom", safefile.ErrNotRegular},
		{"directory", filepath.Join(dir, "dir"), safefile.ErrNotRegular},
		{"socket", filepath.Join(dir, "socket"), safefile.ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := safefile.Read(t.Context(), tt.path, 10)
			if tt.err == nil && (err != nil || len(b) != 10) || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("Read(%s) = %d bytes, %v; want %v", tt.path, len(b), err, tt.err)
			}
		})
	}
}

func TestReadIn(t *testing.T) {
	dir := files(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		name string
		err  error // nil: reads 10 bytes; errAny: some error
	}{
		{"ok", nil},
		{"to-ok", nil},
		{"big", safefile.ErrTooLarge},
		{"fifo", safefile.ErrNotRegular},
		{"to-fifo", safefile.ErrNotRegular},
		{"dir", safefile.ErrNotRegular},
		{"zero", errAny},   // a symlink out of the root
		{"escape", errAny}, // a symlink out of the root
		{"up", errAny},     // a symlink to ..
		{"../ok", errAny},
		{"/etc/hostname", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := safefile.ReadIn(t.Context(), root, tt.name, 10)
			switch {
			case tt.err == nil && (err != nil || len(b) != 10):
				t.Fatalf("ReadIn(%s) = %d bytes, %v; want 10 bytes", tt.name, len(b), err)
			case tt.err == errAny && err == nil:
				t.Fatalf("ReadIn(%s) = %d bytes, want an error", tt.name, len(b))
			case tt.err != nil && tt.err != errAny && !errors.Is(err, tt.err):
				t.Fatalf("ReadIn(%s) = %v, want %v", tt.name, err, tt.err)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestReadAllHonoursContext: a reader that never returns (a pipe nobody
// writes to) does not hold ReadAll past its context.
func TestReadAllHonoursContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if b, err := safefile.ReadAll(ctx, r, 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadAll(blocked pipe) = %q, %v; want context.DeadlineExceeded", b, err)
	}
	// A reader that never ends is cut at the limit.
	if b, err := safefile.ReadAll(t.Context(), zeros{}, 1<<20); !errors.Is(err, safefile.ErrTooLarge) {
		t.Fatalf("ReadAll(endless) = %d bytes, %v; want ErrTooLarge", len(b), err)
	}
	done, cancel2 := context.WithCancel(t.Context())
	cancel2()
	if _, err := safefile.Read(done, "/dev/null", 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read(canceled) = %v, want context.Canceled", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
