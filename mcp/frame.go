package mcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// lineReader splits a stdio MCP stream into messages: newline-delimited
// JSON-RPC (the stdio transport forbids embedded newlines). A line longer
// than max is not buffered whole: next returns its first max bytes with
// long set, and the caller either skips or streams the rest.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
	// pending is the part of a long line read past max; pendingEOL is set
	// when it holds the line's '\n'.
	pending    []byte
	pendingEOL bool
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line with its terminating '\n' (the last line of a
// stream may lack it). long reports a line cut at max bytes; the rest of
// it is still unread. At the end of the stream it returns io.EOF.
func (l *lineReader) next() (line []byte, long bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if len(l.buf)+len(chunk) > l.max {
			n := l.max - len(l.buf)
			l.buf = append(l.buf, chunk[:n]...)
			// ReadSlice's buffer is only valid until the next read:
			// keep what was read past max for rest.
			l.pending = append(l.pending[:0], chunk[n:]...)
			l.pendingEOL = err == nil
			return l.buf, true, nil
		}
		l.buf = append(l.buf, chunk...)
		switch err {
		case nil:
			return l.buf, false, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(l.buf) > 0 {
				return l.buf, false, nil
			}
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}

// rest passes the remainder of a long line, up to and including its '\n',
// to fn (nil discards it).
func (l *lineReader) rest(fn func([]byte) error) error {
	emit := func(b []byte) error {
		if fn == nil || len(b) == 0 {
			return nil
		}
		return fn(b)
	}
	if err := emit(l.pending); err != nil {
		return err
	}
	done := l.pendingEOL
	l.pending = l.pending[:0]
	for !done {
		chunk, err := l.r.ReadSlice('\n')
		if err := emit(chunk); err != nil {
			return err
		}
		switch err {
		case nil:
			done = true
		case bufio.ErrBufferFull:
		default:
			return err
		}
	}
	return nil
}

// spoolLimit bounds a server message spooled to disk.
const spoolLimit = 4 << 30

// A serverLine is one message of the server's: in memory, or, over the
// line cap, spooled to an unlinked temporary file so that it is read
// whole before any of it is relayed.
type serverLine struct {
	data []byte
	file *os.File
	sum  string // "raw-sha256:…" of the line as relayed, newline included
}

// spool reads the rest of a long line whose first bytes are head into a
// temporary file, hashing it on the way.
func (l *lineReader) spool(head []byte) (*serverLine, error) {
	f, err := os.CreateTemp("", "docket-mcp-line-")
	if err != nil {
		_ = l.rest(nil)
		return nil, fmt.Errorf("spooling a long message: %w", err)
	}
	_ = os.Remove(f.Name())
	h := sha256.New()
	w := io.MultiWriter(f, h)
	// Writing stops at the first error, reading goes on to the line's end.
	var n int64
	var werr error
	write := func(b []byte) error {
		if werr != nil {
			return nil
		}
		if n += int64(len(b)); n > spoolLimit {
			werr = fmt.Errorf("a message longer than %d bytes", int64(spoolLimit))
		} else if _, err := w.Write(b); err != nil {
			werr = err
		}
		return nil
	}
	_ = write(head)
	err = l.rest(write)
	if err == nil || err == io.EOF {
		err = werr
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("spooling a long message: %w", err)
	}
	return &serverLine{file: f, sum: "raw-sha256:" + hex.EncodeToString(h.Sum(nil))}, nil
}

// inMemory returns a serverLine of a line read whole.
func inMemory(line []byte) *serverLine {
	sum := sha256.Sum256(line)
	return &serverLine{data: line, sum: "raw-sha256:" + hex.EncodeToString(sum[:])}
}

// reader returns the message's bytes from the start.
func (s *serverLine) reader() (io.ByteScanner, error) {
	if s.file == nil {
		return bytes.NewReader(s.data), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return bufio.NewReaderSize(s.file, 64<<10), nil
}

// writeTo writes the message to w.
func (s *serverLine) writeTo(w io.Writer) error {
	if s.file == nil {
		_, err := w.Write(s.data)
		return err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.file)
	return err
}

func (s *serverLine) close() {
	if s.file != nil {
		s.file.Close()
	}
}
