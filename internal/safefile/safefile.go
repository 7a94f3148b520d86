// Package safefile reads files that the party being verified names or
// supplies: a TRACE record's file: URLs and the files next to it, a PIC
// proposal's evidence. Naming a FIFO, a device (/dev/zero), a directory or
// a huge file must not hang or exhaust the verifier, so only regular files
// are read, their size is checked before and after opening, the open
// cannot block (O_NONBLOCK: a FIFO swapped in after the check opens at
// once and is refused), and the read gives up when its context is done.
package safefile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors Read and ReadIn wrap.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("over the size limit")
)

// Read reads the regular file at path (symbolic links followed), of at
// most max bytes, until ctx is done.
func Read(ctx context.Context, path string, max int64) ([]byte, error) {
	return read(ctx, osDir{}, path, max)
}

// ReadIn is Read for name inside root: neither ".." nor a symbolic link
// can leave it.
func ReadIn(ctx context.Context, root *os.Root, name string, max int64) ([]byte, error) {
	return read(ctx, root, name, max)
}

// dir is what read needs of a directory: os.Root, or the whole file
// system (osDir).
type dir interface {
	Stat(name string) (fs.FileInfo, error)
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
}

type osDir struct{}

func (osDir) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osDir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

func read(ctx context.Context, d dir, name string, max int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := d.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := check(name, st, max); err != nil {
		return nil, err
	}
	f, err := d.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(name, fst, max); err != nil {
		return nil, err
	}
	if !os.SameFile(st, fst) {
		return nil, fmt.Errorf("%s changed while it was opened", name)
	}
	b, err := ReadAll(ctx, f, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

func check(name string, st fs.FileInfo, max int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, kind(st.Mode()))
	}
	if st.Size() > max {
		return fmt.Errorf("%s: %w: %d bytes, limit %d", name, ErrTooLarge, st.Size(), max)
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// ReadAll reads r to its end, at most max bytes, and returns ctx's error
// as soon as ctx is done, even while a Read blocks (that Read is left to
// return on its own; the caller closes r).
func ReadAll(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	c := make(chan result, 1)
	go func() {
		var buf bytes.Buffer
		_, err := buf.ReadFrom(ctxReader{ctx, io.LimitReader(r, max+1)})
		c <- result{buf.Bytes(), err}
	}()
	select {
	case res := <-c:
		if res.err != nil {
			return nil, res.err
		}
		if int64(len(res.data)) > max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
		}
		return res.data, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
