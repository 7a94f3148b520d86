// Package logtest checks implementations of the log package's interfaces
// against their written contracts, the way testing/fstest checks an fs.FS,
// and gives the log's tests real faults: a small file system that fills up
// (SmallDisk, FillDisk), and a connection to speak HTTP by hand (Dial).
package logtest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/docketlog/docket/log"
)

// TestIndex checks an implementation of log.Index against the contract in
// its documentation. open returns a new, empty index each time it is
// called, and a function that closes that index and opens its storage
// again (nil if the implementation is not durable), so that what survives
// a restart is checked too. open registers its own cleanup.
func TestIndex(t *testing.T, open func(t *testing.T) (x log.Index, reopen func() log.Index)) {
	ctx := t.Context()
	hash := func(i int) [32]byte {
		return sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i)))
	}
	run := func(from, n int) [][32]byte {
		hs := make([][32]byte, n)
		for i := range hs {
			hs[i] = hash(from + i)
		}
		return hs
	}
	covered := func(t *testing.T, x log.Index, want uint64) {
		t.Helper()
		if n, err := x.Covered(ctx); err != nil || n != want {
			t.Fatalf("Covered() = %d, %v; want %d", n, err, want)
		}
	}
	lookup := func(t *testing.T, x log.Index, h [32]byte, want uint64, wantOK bool) {
		t.Helper()
		i, ok, err := x.Lookup(ctx, h)
		if err != nil || ok != wantOK || (ok && i != want) {
			t.Fatalf("Lookup(%x) = %d, %v, %v; want %d, %v", h[:4], i, ok, err, want, wantOK)
		}
	}

	t.Run("empty", func(t *testing.T) {
		x, _ := open(t)
		covered(t, x, 0)
		lookup(t, x, hash(0), 0, false)
	})
	t.Run("add runs", func(t *testing.T) {
		x, _ := open(t)
		if dups, err := x.Add(ctx, 0, run(0, 300)); err != nil || len(dups) != 0 {
			t.Fatalf("Add(0, 300 hashes) = %v, %v; want no duplicates", dups, err)
		}
		if dups, err := x.Add(ctx, 300, run(300, 5)); err != nil || len(dups) != 0 {
			t.Fatalf("Add(300, 5 hashes) = %v, %v; want no duplicates", dups, err)
		}
		covered(t, x, 305)
		for _, i := range []int{0, 1, 255, 256, 299, 300, 304} {
			lookup(t, x, hash(i), uint64(i), true)
		}
		lookup(t, x, hash(305), 0, false)
		if _, err := x.Add(ctx, 305, nil); err != nil {
			t.Errorf("Add(305, no hashes) = %v, want nil", err)
		}
		covered(t, x, 305)
	})
	t.Run("add must start where the index ends", func(t *testing.T) {
		x, _ := open(t)
		if _, err := x.Add(ctx, 0, run(0, 10)); err != nil {
			t.Fatal(err)
		}
		for _, from := range []uint64{0, 5, 9, 11} {
			if _, err := x.Add(ctx, from, run(100, 3)); err == nil {
				t.Errorf("Add(%d) on an index covering 10 = nil, want an error", from)
			}
		}
		covered(t, x, 10)
		lookup(t, x, hash(100), 0, false)
	})
	t.Run("duplicates keep the first index", func(t *testing.T) {
		x, _ := open(t)
		if _, err := x.Add(ctx, 0, run(0, 4)); err != nil {
			t.Fatal(err)
		}
		dups, err := x.Add(ctx, 4, [][32]byte{hash(7), hash(2), hash(7)})
		if err != nil || len(dups) != 2 || dups[0] != 5 || dups[1] != 6 {
			t.Fatalf("Add(4, [h7 h2 h7]) = %v, %v; want duplicates [5 6]", dups, err)
		}
		covered(t, x, 7)
		lookup(t, x, hash(2), 2, true)
		lookup(t, x, hash(7), 4, true)
		// In a long run too (an index may write rows in groups): h3 at
		// 7+70, h200 first at 7+100 and again at 7+199.
		hs := run(100, 200)
		hs[70] = hash(3)
		hs[199] = hs[100]
		dups, err = x.Add(ctx, 7, hs)
		if err != nil || len(dups) != 2 || dups[0] != 77 || dups[1] != 206 {
			t.Fatalf("Add(7, 200 hashes) = %v, %v; want duplicates [77 206]", dups, err)
		}
		covered(t, x, 207)
		lookup(t, x, hash(3), 3, true)
		lookup(t, x, hash(200), 107, true)
	})
	t.Run("truncate", func(t *testing.T) {
		x, _ := open(t)
		if _, err := x.Add(ctx, 0, run(0, 20)); err != nil {
			t.Fatal(err)
		}
		if err := x.Truncate(ctx, 21); err == nil {
			t.Errorf("Truncate(21) on an index covering 20 = nil, want an error")
		}
		covered(t, x, 20)
		if err := x.Truncate(ctx, 12); err != nil {
			t.Fatalf("Truncate(12) = %v", err)
		}
		covered(t, x, 12)
		lookup(t, x, hash(11), 11, true)
		lookup(t, x, hash(12), 0, false)
		lookup(t, x, hash(19), 0, false)
		// The truncated entries can be indexed again, at new indices.
		if dups, err := x.Add(ctx, 12, [][32]byte{hash(19), hash(12)}); err != nil || len(dups) != 0 {
			t.Fatalf("Add(12) after Truncate = %v, %v; want no duplicates", dups, err)
		}
		lookup(t, x, hash(19), 12, true)
		lookup(t, x, hash(12), 13, true)
		if err := x.Truncate(ctx, 0); err != nil {
			t.Fatal(err)
		}
		covered(t, x, 0)
		lookup(t, x, hash(0), 0, false)
	})
	t.Run("concurrent lookups", func(t *testing.T) {
		x, _ := open(t)
		if _, err := x.Add(ctx, 0, run(0, 1000)); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 8)
		for g := range 8 {
			go func() {
				for i := g; i < 1000; i += 8 {
					j, ok, err := x.Lookup(context.Background(), hash(i))
					if err != nil || !ok || j != uint64(i) {
						errc <- fmt.Errorf("Lookup(hash of %d) = %d, %v, %v; want %d, true", i, j, ok, err, i)
						return
					}
				}
				errc <- nil
			}()
		}
		for range 8 {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("durable", func(t *testing.T) {
		x, reopen := open(t)
		if reopen == nil {
			t.Skip("the index is not durable")
		}
		if _, err := x.Add(ctx, 0, run(0, 50)); err != nil {
			t.Fatal(err)
		}
		if err := x.Truncate(ctx, 40); err != nil {
			t.Fatal(err)
		}
		x = reopen()
		covered(t, x, 40)
		lookup(t, x, hash(39), 39, true)
		lookup(t, x, hash(40), 0, false)
		if _, err := x.Add(ctx, 40, run(40, 1)); err != nil {
			t.Fatalf("Add(40) after reopening = %v", err)
		}
	})
}
