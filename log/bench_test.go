package log

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/docketlog/docket/receipts"
)

func BenchmarkParseEntry(b *testing.B) {
	priv, _ := receipts.GenerateKey()
	leaf := testEntry(b, priv, "s", 1)
	for b.Loop() {
		if _, err := receipts.ParseEntry(leaf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd measures Add end to end (parse, verify, dedup, sequence,
// publish, prove) with many concurrent callers, as a profile target.
func BenchmarkAdd(b *testing.B) {
	l, _ := newTestLogB(b)
	defer l.Close(context.Background())
	priv, _ := receipts.GenerateKey()
	leaves := make([][]byte, b.N)
	for i := range leaves {
		leaves[i] = testEntry(b, priv, "bench", int64(i+1))
	}
	var next atomic.Int64
	b.SetParallelism(512)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, err := l.Add(context.Background(), leaves[i]); err != nil {
				b.Error(err)
			}
		}
	})
}
