package witness

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkAddCheckpoint measures add-checkpoint over a real HTTP server on
// loopback with a real SQLite file (WAL, synchronous=FULL): each request
// extends the log by one leaf with a real consistency proof and is committed
// before the answer. It reports the latency percentiles and requests/s.
//
//	go test -run '^$' -bench AddCheckpoint -benchtime 2000x ./witness
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, logs := range []int{1, 8} {
		b.Run(fmt.Sprintf("logs=%d", logs), func(b *testing.B) {
			benchmarkAdd(b, logs)
		})
	}
}

func benchmarkAdd(b *testing.B, nLogs int) {
	tls := make([]*testLog, nLogs)
	for i := range tls {
		tls[i] = newTestLog(b, fmt.Sprintf("example.com/bench%d", i))
	}
	w := newTestWitness(b, Config{RateLimit: -1}, tls...)
	srv := httptest.NewServer(w)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: nLogs}}

	// Each log gets a sequence of requests, each one leaf further.
	perLog := (b.N + nLogs - 1) / nLogs
	bodies := make([][][]byte, nLogs)
	for i, l := range tls {
		for size := uint64(1); size <= uint64(perLog); size++ {
			bodies[i] = append(bodies[i], l.request(b, size-1, size))
		}
	}

	latencies := make([][]time.Duration, nLogs)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range tls {
		wg.Go(func() {
			for _, body := range bodies[i] {
				t0 := time.Now()
				r, err := postHTTP(client, srv.URL, body)
				latencies[i] = append(latencies[i], time.Since(t0))
				if err != nil || r.status != http.StatusOK {
					b.Errorf("Add() = %d %q %v, want 200", r.status, r.body, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	all := slices.Concat(latencies...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
}
