package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// bundle encodes entries as a tlog-tiles entry bundle.
func bundle(entries ...[]byte) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, uint16(len(e)))
		b = append(b, e...)
	}
	return b
}

func TestSplitBundle(t *testing.T) {
	many := func(n, size int) []byte {
		es := make([][]byte, n)
		for i := range es {
			es[i] = bytes.Repeat([]byte{'x'}, size)
		}
		return bundle(es...)
	}
	tests := []struct {
		name    string
		b       []byte
		w       int
		entries int
		err     error // nil: any error, with entries < 0
	}{
		{"empty", nil, 256, 0, nil},
		{"one", bundle([]byte("leaf")), 256, 1, nil},
		{"full", many(256, 3), 256, 256, nil},
		{"largest legal", many(256, MaxLeafSize), 256, 256, nil},
		{"partial", many(5, 10), 5, 5, nil},
		{"more entries than the width", many(257, 0), 256, -1, ErrOversized},
		{"more entries than a partial width", many(6, 1), 5, -1, ErrOversized},
		{"zero bytes: 2^23 empty entries", make([]byte, 1<<24), 256, -1, ErrOversized},
		{"more bytes than 256 entries hold", make([]byte, MaxBundleSize+1), 256, -1, ErrOversized},
		{"dangling byte", append(bundle([]byte("a")), 0), 256, -1, nil},
		{"truncated entry", bundle([]byte("abcdef"))[:5], 256, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitBundle(tt.b, tt.w)
			switch {
			case tt.entries >= 0 && (err != nil || len(got) != tt.entries):
				t.Errorf("splitBundle(%d bytes, %d) = %d entries, %v; want %d", len(tt.b), tt.w, len(got), err, tt.entries)
			case tt.entries < 0 && err == nil:
				t.Errorf("splitBundle(%d bytes, %d) = %d entries; want an error", len(tt.b), tt.w, len(got))
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("splitBundle(%d bytes, %d) = %v; want %v", len(tt.b), tt.w, err, tt.err)
			}
		})
	}
}

// FuzzSplitBundle: never a panic, never more entries than the width, and
// what is accepted re-encodes to the same bytes.
func FuzzSplitBundle(f *testing.F) {
	f.Add(bundle([]byte("a"), []byte("bc")), 2)
	f.Add(make([]byte, 600), 256)
	f.Add([]byte{0xff, 0xff, 1}, 1)
	f.Fuzz(func(t *testing.T, b []byte, w int) {
		if w < 1 || w > 256 {
			return
		}
		es, err := splitBundle(b, w)
		if err != nil {
			return
		}
		if len(es) > w || !bytes.Equal(bundle(es...), b) {
			t.Fatalf("splitBundle(%x, %d) = %d entries, re-encoded %x", b, w, len(es), bundle(es...))
		}
	})
}

func TestMissing(t *testing.T) {
	const big = int64(1) << 50
	tests := []struct {
		seqs []int64
		top  int64
		want []Gap
	}{
		{nil, 0, nil},
		{nil, 3, []Gap{{1, 3}}},
		{[]int64{1, 2, 3}, 3, nil},
		{[]int64{2, 5}, 5, []Gap{{1, 1}, {3, 4}}},
		{[]int64{1, 2}, 4, []Gap{{3, 4}}},
		{[]int64{1, big}, big, []Gap{{2, big - 1}}},
		{[]int64{1}, math.MaxInt64, []Gap{{2, math.MaxInt64}}},
		{[]int64{1, math.MaxInt64}, math.MaxInt64, []Gap{{2, math.MaxInt64 - 1}}},
		{[]int64{math.MaxInt64 - 1, math.MaxInt64}, math.MaxInt64, []Gap{{1, math.MaxInt64 - 2}}},
		{[]int64{1, 9}, 5, []Gap{{2, 5}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.seqs, tt.top), func(t *testing.T) {
			if got := missing(tt.seqs, tt.top); !slices.Equal(got, tt.want) {
				t.Errorf("missing(%v, %d) = %v, want %v", tt.seqs, tt.top, got, tt.want)
			}
		})
	}
}

// TestSeenTake checks the monitor's set of numbers against a plain set.
func TestSeenTake(t *testing.T) {
	for round := range 20 {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		var s seen
		plain := map[int64]bool{}
		for range 500 {
			n := r.Int64N(300) + 1
			if got, want := s.note(n), plain[n]; got != want {
				t.Fatalf("round %d: note(%d) = %v, want %v", round, n, got, want)
			}
			plain[n] = true
			for i := 1; i < len(s.Missing); i++ {
				if s.Missing[i-1][1]+1 >= s.Missing[i][0] || s.Missing[i][0] > s.Missing[i][1] {
					t.Fatalf("round %d: ranges %v are not sorted and disjoint", round, s.Missing)
				}
			}
		}
		for n := int64(1); n <= s.Max; n++ {
			in := !slices.ContainsFunc(s.Missing, func(g [2]int64) bool { return g[0] <= n && n <= g[1] })
			if in != plain[n] {
				t.Fatalf("round %d: %d in the set = %v, want %v", round, n, in, plain[n])
			}
		}
	}
}

func TestFindingListCaps(t *testing.T) {
	var l findingList
	for i := range 3 * MaxPerKind {
		l.add(Finding{Kind: KindWithheld, Count: 2, Index: uint64(i)})
	}
	l.add(Finding{Kind: KindChainBreak})
	var other findingList
	for range MaxPerKind + 5 {
		other.add(Finding{Kind: KindChainBreak})
	}
	l.merge(&other)
	all := l.all()
	count := map[string]int{}
	var summaries []Finding
	for _, f := range all {
		count[f.Kind]++
		if f.evidence == nil && f.Message != "" {
			summaries = append(summaries, f)
		}
	}
	if count[KindWithheld] != MaxPerKind+1 || count[KindChainBreak] != MaxPerKind+1 {
		t.Fatalf("listed %v, want %d of each kind", count, MaxPerKind+1)
	}
	if len(summaries) != 2 || summaries[0].Kind != KindChainBreak || summaries[1].Count != 2*2*MaxPerKind {
		t.Fatalf("summaries %+v", summaries)
	}
}

// TestRecordClipsLongMembers: what a reader keeps of an entry is bounded,
// whatever its issuer wrote in it, and clipping keeps equality.
func TestRecordClipsLongMembers(t *testing.T) {
	is := tlogtest.NewIssuer(t)
	long := strings.Repeat("é", 5000) // 10,000 bytes
	leaf := is.Leaf(is.Sign(long, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: long + "a",
		ToolInputHash: long, Decision: receipts.Allow, Reason: long}))
	r, err := ParseRecord(0, leaf)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"session": r.Session, "tool_name": r.ToolName, "tool_input_hash": r.ToolInputHash, "reason": r.Reason} {
		if len(s) > 138 || len(s) <= MaxMember || !utf8.ValidString(s) {
			t.Errorf("record keeps %s of %d bytes (valid UTF-8 %v), want a clip of at most 138", name, len(s), utf8.ValidString(s))
		}
	}
	if r.Session != r.ToolInputHash || r.Session == r.ToolName || Clip(long) != r.Session || Clip("short") != "short" {
		t.Errorf("clipping does not keep equality: %q %q %q", r.Session, r.ToolInputHash, r.ToolName)
	}
}
