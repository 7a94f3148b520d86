package strictjson_test

import (
	"testing"
	"unicode"

	"github.com/docketlog/docket/internal/strictjson"
)

// TestFoldRune checks that FoldRune is constant on every class of the
// case-insensitive decoders: unicode.SimpleFold's orbits (Go's
// encoding/json), upper case (.NET) and lower then upper case.
func TestFoldRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		f := strictjson.FoldRune(r)
		for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
			if strictjson.FoldRune(o) != f {
				t.Fatalf("strictjson.FoldRune(%U) = %U, strictjson.FoldRune(%U) = %U; want equal (one SimpleFold orbit)", r, f, o, strictjson.FoldRune(o))
			}
		}
		if u := unicode.ToUpper(r); strictjson.FoldRune(u) != f {
			t.Fatalf("strictjson.FoldRune(%U) = %U, strictjson.FoldRune(ToUpper) = %U; want equal", r, f, strictjson.FoldRune(u))
		}
		if l := unicode.ToLower(r); strictjson.FoldRune(l) != f {
			t.Fatalf("strictjson.FoldRune(%U) = %U, strictjson.FoldRune(ToLower) = %U; want equal", r, f, strictjson.FoldRune(l))
		}
	}
}
