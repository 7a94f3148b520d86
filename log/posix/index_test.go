package posix

import (
	"crypto/sha256"
	"path/filepath"
	"testing"
)

func BenchmarkIndexLookup(b *testing.B) {
	x, err := OpenIndex(b.Context(), filepath.Join(b.TempDir(), "x.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	var hs [][32]byte
	for i := range 10000 {
		hs = append(hs, sha256.Sum256([]byte{byte(i), byte(i >> 8)}))
	}
	if _, err := x.Add(b.Context(), 0, hs); err != nil {
		b.Fatal(err)
	}
	// A hit passes the filter and reads SQLite.
	for b.Loop() {
		if _, ok, err := x.Lookup(b.Context(), hs[5000]); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func TestFilter(t *testing.T) {
	f := newFilter(1000)
	var in [][32]byte
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
