package log

import (
	"context"
	"crypto/sha256"
	"path/filepath"
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

func BenchmarkIndexLookup(b *testing.B) {
	x, err := openIndex(filepath.Join(b.TempDir(), "x.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.close()
	var hs []leafHash
	for i := range 10000 {
		hs = append(hs, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	if _, err := x.add(b.Context(), 0, hs); err != nil {
		b.Fatal(err)
	}
	miss := sha256.Sum256([]byte("miss"))
	for b.Loop() {
		if _, ok, err := x.lookup(b.Context(), miss); err != nil || ok {
			b.Fatal(ok, err)
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

func TestFilter(t *testing.T) {
	f := newFilter(1000)
	var in []leafHash
	for i := range 5000 {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), 1})
		f.add(h)
		in = append(in, h)
	}
	for _, h := range in {
		if !f.mayContain(h) {
			t.Fatalf("mayContain(added) = false, want true")
		}
	}
	fp := 0
	for i := range 100000 {
		if f.mayContain(sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16), 2})) {
			fp++
		}
	}
	if fp > 2000 {
		t.Errorf("false positives = %d of 100000, want under 2%%", fp)
	}
}
