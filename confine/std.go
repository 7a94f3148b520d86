package confine

import (
	"io"
	"os"
)

func orStd(r io.Reader, d *os.File) io.Reader {
	if r == nil {
		return d
	}
	return r
}

func orStdW(w io.Writer, d *os.File) io.Writer {
	if w == nil {
		return d
	}
	return w
}
