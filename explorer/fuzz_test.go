package explorer

import (
	"net/url"
	"testing"
)

// FuzzSplitBundle: any bytes a log serves as an entry bundle are split or
// refused, never a crash, and never more than 256 entries.
func FuzzSplitBundle(f *testing.F) {
	f.Add([]byte{0, 2, '{', '}'})
	f.Add([]byte{0, 5, 'a'})
	f.Add([]byte{0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		leaves, err := splitBundle(b)
		if err == nil && len(leaves) > 256 {
			t.Fatalf("splitBundle = %d entries, want at most 256", len(leaves))
		}
	})
}

// FuzzFilter: any query string is a filter or a clear error, never a
// crash, and a filter's query string reads back as the same filter.
func FuzzFilter(f *testing.F) {
	f.Add("q=sha256:00&decision=deny")
	f.Add("q=12&from=2026-11-26T08:55&to=2026-11-27")
	f.Add("issuer=sb:issuer:x&session=s&tool=Bash&kind=unmediated")
	f.Add("from=yesterday&decision=maybe")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fl := filterOf(q)
		cond, args, err := fl.where()
		if err == nil && cond == "" {
			t.Fatalf("where(%q) = empty condition with %v", raw, args)
		}
		if again := filterOf(fl.query()); again != fl {
			t.Fatalf("filterOf(query(%+v)) = %+v", fl, again)
		}
	})
}
