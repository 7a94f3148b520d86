package witness

import (
	"math"
	"sync"
	"time"
)

// limiter is a token bucket per log origin.
type limiter struct {
	rate  float64 // tokens per second
	burst float64

	bucketsMu sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), buckets: make(map[string]*bucket)}
}

// allow reports whether a request for key may proceed at now, and takes a
// token if so. Keys are origins of configured logs, so the map stays small.
func (l *limiter) allow(key string, now time.Time) bool {
	l.bucketsMu.Lock()
	defer l.bucketsMu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+elapsed*l.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
