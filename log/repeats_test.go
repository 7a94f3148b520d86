package log

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRepeatsHandler(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := RepeatsHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})).(*repeats)
	h.st.now = func() time.Time { return clock }
	logger := slog.New(h)
	fail := func(n int, step time.Duration) {
		for range n {
			logger.Info("publishCheckpoint: witness w1: connection refused")
			clock = clock.Add(step)
		}
	}
	lines := func() []string {
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	tests := []struct {
		name  string
		run   func()
		want  int
		match string
	}{
		{"a burst of failures is one WARN", func() { fail(50, 100*time.Millisecond) }, 1, `level=WARN msg="checkpoint publishing failing`},
		{"still failing after a minute: one summary", func() { fail(600, 100*time.Millisecond) }, 1, `level=WARN msg="checkpoint publishing still failing" failures=`},
		{"other records pass through", func() { logger.Info("log started") }, 1, `level=INFO msg="log started"`},
		{"failing again after a quiet spell: a new WARN", func() { clock = clock.Add(2 * time.Minute); fail(3, time.Second) }, 1, `level=WARN msg="checkpoint publishing failing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run()
			got := lines()
			if len(got) != tt.want || tt.want > 0 && !strings.Contains(got[0], tt.match) {
				t.Fatalf("lines = %q, want %d line(s) containing %q", got, tt.want, tt.match)
			}
		})
	}
}
