package posix

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// filter is a Bloom filter over the leaf hashes in the dedup index, so that
// a new entry (the common case) skips the SQLite lookup. Leaf hashes are
// uniform, so the probe positions are taken from their bytes. A filter is
// safe for concurrent use: bits are set and read atomically, and only the
// follower adds.
type filter struct {
	bits     []atomic.Uint64
	m        uint64 // number of bits
	n        atomic.Uint64
	capacity uint64
}

// filterProbes and filterBitsPerEntry give a false positive rate under 1%
// at capacity.
const (
	filterProbes       = 7
	filterBitsPerEntry = 10
	minFilterCapacity  = 1 << 20
)

func newFilter(capacity uint64) *filter {
	capacity = max(capacity, minFilterCapacity)
	words := (capacity*filterBitsPerEntry + 63) / 64
	return &filter{bits: make([]atomic.Uint64, words), m: words * 64, capacity: capacity}
}

func (f *filter) probes(h [32]byte, fn func(word uint64, bit uint64) bool) bool {
	h1 := binary.LittleEndian.Uint64(h[0:8])
	h2 := binary.LittleEndian.Uint64(h[8:16]) | 1
	for i := range uint64(filterProbes) {
		p := (h1 + i*h2) % f.m
		if !fn(p/64, 1<<(p%64)) {
			return false
		}
	}
	return true
}

func (f *filter) add(h [32]byte) {
	f.probes(h, func(w, b uint64) bool { f.bits[w].Or(b); return true })
	f.n.Add(1)
}

// mayContain reports false only if h was never added.
func (f *filter) mayContain(h [32]byte) bool {
	return f.probes(h, func(w, b uint64) bool { return f.bits[w].Load()&b != 0 })
}

// full reports whether the filter holds more entries than it was sized for.
func (f *filter) full() bool { return f.n.Load() > f.capacity }

// rebuildFilter replaces the filter with one of every hash in the index,
// sized for twice as many.
func (x *Index) rebuildFilter(ctx context.Context) error {
	n, err := x.Covered(ctx)
	if err != nil {
		return err
	}
	f := newFilter(2 * n)
	rows, err := x.db.QueryContext(ctx, `SELECT hash FROM leaves`)
	if err != nil {
		return fmt.Errorf("building dedup filter: %w", err)
	}
	defer rows.Close()
	var b []byte
	for rows.Next() {
		if err := rows.Scan(&b); err != nil {
			return fmt.Errorf("building dedup filter: %w", err)
		}
		if len(b) == 32 {
			f.add([32]byte(b))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("building dedup filter: %w", err)
	}
	x.filter.Store(f)
	return nil
}
