package logclient

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzCheckBundle checks that checkBundle never panics, and that what it
// accepts is exactly width length-prefixed entries.
func FuzzCheckBundle(f *testing.F) {
	f.Add([]byte{0, 1, 'a', 0, 0}, 2)
	f.Add([]byte{0, 5, 'a'}, 1)
	f.Add([]byte{}, 0)
	f.Add([]byte{0xff, 0xff}, 256)
	f.Fuzz(func(t *testing.T, data []byte, width int) {
		if checkBundle(data, width) != nil {
			return
		}
		n, rest := 0, data
		for len(rest) > 0 {
			size := int(binary.BigEndian.Uint16(rest))
			rest = rest[2+size:]
			n++
		}
		if n != width {
			t.Fatalf("checkBundle(%x, %d) accepted %d entries", data, width, n)
		}
	})
}

// FuzzParseRetryAfter checks that a log's Retry-After never yields a
// negative delay or one past the cap.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", " 5 "} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := parseRetryAfter(v, now); d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v, want 0 to %v", v, d, maxRetryAfter)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name, v string
		want    time.Duration
	}{
		{"seconds", "120", 2 * time.Minute},
		{"date", "Thu, 01 Jan 2026 00:00:30 GMT", 30 * time.Second},
		{"past date", "Wed, 21 Oct 2015 07:28:00 GMT", 0},
		{"negative", "-1", 0},
		{"huge", "99999999999999999999", maxRetryAfter},
		{"empty", "", 0},
		{"garbage", "soon", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRetryAfter(tt.v, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}
