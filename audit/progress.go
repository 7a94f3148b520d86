package audit

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress prints catch-up progress to a terminal: entries read, entries/s
// and the time left, at most once a second.
type progress struct {
	w           io.Writer
	start, last time.Time
	from, to, n uint64
}

func newProgress(w io.Writer, from, to uint64) *progress {
	now := time.Now()
	return &progress{w: w, start: now, last: now, from: from, to: to}
}

func (p *progress) tick() {
	p.n++
	if p.w == nil || p.n%1024 != 0 {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= time.Second {
		p.last = now
		rate := float64(p.n) / now.Sub(p.start).Seconds()
		left := time.Duration(float64(p.to-p.from-p.n)/rate) * time.Second
		fmt.Fprintf(p.w, "\rdocket: %d/%d entries, %.0f/s, %s left   ", p.from+p.n, p.to, rate, left.Round(time.Second))
	}
}

func (p *progress) done() {
	if p.w != nil && p.last != p.start {
		fmt.Fprintln(p.w)
	}
}

// IsTerminal reports whether f is a terminal (a character device), where
// progress belongs.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
