package audit

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docketlog/docket/internal/plural"
)

// progress prints catch-up progress to a terminal, at most once a second:
// entries read of the log's size, how many verified and how many did not,
// the findings so far, entries/s and the time left.
type progress struct {
	w           io.Writer
	start, last time.Time
	from, to, n uint64
	bad         uint64
	findings    func() int
}

func newProgress(w io.Writer, from, to uint64) *progress {
	now := time.Now()
	return &progress{w: w, start: now, last: now, from: from, to: to}
}

// tick counts one entry read; bad says it did not verify.
func (p *progress) tick(bad bool) {
	p.n++
	if bad {
		p.bad++
	}
	if p.w == nil || p.n%1024 != 0 {
		return
	}
	if now := time.Now(); now.Sub(p.last) >= time.Second {
		p.last = now
		p.print(now)
	}
}

func (p *progress) print(now time.Time) {
	rate := float64(p.n) / now.Sub(p.start).Seconds()
	left := time.Duration(float64(p.to-p.from-p.n)/rate) * time.Second
	findings := int(p.bad)
	if p.findings != nil {
		findings = p.findings()
	}
	pct := 100 * float64(p.from+p.n) / float64(max(p.to, 1))
	fmt.Fprintf(p.w, "\rdocket: %d/%d entries read (%.0f%%), %d verified, %s, %.0f/s, %s left   ",
		p.from+p.n, p.to, pct, p.n-p.bad, plural.Count(findings, "finding"), rate, left.Round(time.Second))
}

func (p *progress) done() {
	if p.w != nil && p.last != p.start {
		p.print(time.Now())
		fmt.Fprintln(p.w)
	}
}

// IsTerminal reports whether f is a terminal (a character device), where
// progress belongs.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
