package mcp

import (
	"bufio"
	"io"
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
