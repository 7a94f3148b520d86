package explorer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
)

// TestIssuerTally: an issuer's summary kept up to date chunk by chunk is
// the one counted from all its rows, whatever order, repeats, holes and
// entries without issuer_sequence the issuer's entries come with, and
// past maxRuns holes too (then counted from the rows).
func TestIssuerTally(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		seqs func(i int) int64
		n    int
	}{
		{"in order", func(i int) int64 { return int64(i + 1) }, 3000},
		{"a hole", func(i int) int64 {
			if i >= 100 {
				return int64(i + 1 + 1<<40)
			}
			return int64(i + 1)
		}, 1000},
		{"reversed", func(i int) int64 { return int64(2000 - i) }, 2000},
		{"shuffled with repeats", func(i int) int64 { return rng.Int64N(1500) + 1 }, 3000},
		{"legacy", func(i int) int64 { return int64(i%3) - 1 }, 900},
		{"starts late", func(i int) int64 { return int64(i + 50) }, 500},
		{"every other", func(i int) int64 { return int64(2*i + 1) }, 2*maxRuns + 50},
		{"every other, then filled", func(i int) int64 {
			if i < 1500 {
				return int64(2*i + 1)
			}
			return int64(2 * (i - 1500))
		}, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := openIndex(t.Context(), filepath.Join(t.TempDir(), "explorer.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer x.db.Close()
			e := &Explorer{idx: x}
			var rows []*row
			for i := range tt.n {
				r := &row{Index: uint64(i), Leaf: make([]byte, 32), Issuer: "kid", Session: fmt.Sprint("s", i/40), Kind: kindDecision,
					Enforced: true, ISeq: tt.seqs(i), Decision: "allow"}
				if i%97 == 5 {
					r.Kind, r.Event, r.HW = kindLifecycle, "issuer_checkpoint", int64(i)
				}
				rows = append(rows, r)
			}
			for from := 0; from < tt.n; from += 700 {
				end := min(tt.n, from+700)
				if err := x.commit(t.Context(), rows[from:end], &state{size: uint64(end), cp: []byte("cp"), hashes: [][]byte{make([]byte, 32)}}); err != nil {
					t.Fatal(err)
				}
				v := &view{size: uint64(end)}
				got, gotMore, err := e.summary(t.Context(), v, 1)
				if err != nil {
					t.Fatal(err)
				}
				want, wantMore, err := e.recount(t.Context(), v, 1)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) || gotMore != wantMore {
					t.Fatalf("summary at %d = %+v (%d more gaps), want %+v (%d more)", end, got, gotMore, want, wantMore)
				}
			}
		})
	}
}
