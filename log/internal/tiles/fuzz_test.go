package tiles

import (
	"bytes"
	"testing"

	"github.com/transparency-dev/tessera/api"
)

// FuzzTrimBundle checks TrimBundle against Tessera's entry bundle parser:
// what it returns parses to exactly the entries asked for, a prefix of the
// bundle's.
func FuzzTrimBundle(f *testing.F) {
	bundle := func(entries ...string) []byte {
		var b []byte
		for _, e := range entries {
			b = append(b, byte(len(e)>>8), byte(len(e)))
			b = append(b, e...)
		}
		return b
	}
	f.Add(bundle("a", "bb", "ccc"), uint8(2))
	f.Add(bundle("a", "bb", "ccc"), uint8(3))
	f.Add(bundle("a"), uint8(2))
	f.Add(bundle(""), uint8(1))
	f.Add([]byte{0}, uint8(1))
	f.Add([]byte{0, 9, 1}, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		got, err := TrimBundle(b, n)
		if err != nil {
			return
		}
		if n == 0 {
			if !bytes.Equal(got, b) {
				t.Fatalf("TrimBundle(%x, 0) = %x, want the whole bundle", b, got)
			}
			return
		}
		var trimmed api.EntryBundle
		if err := trimmed.UnmarshalText(got); err != nil {
			t.Fatalf("TrimBundle(%x, %d) = %x, which does not parse: %v", b, n, got, err)
		}
		if len(trimmed.Entries) != int(n) || !bytes.HasPrefix(b, got) {
			t.Fatalf("TrimBundle(%x, %d) = %x: %d entries, want %d, a prefix", b, n, got, len(trimmed.Entries), n)
		}
	})
}
