package strictjson

import (
	"unicode"
	"unicode/utf8"
)

// FoldRune maps r to one rune of its class under the case folding of the
// case-insensitive decoders: Go's encoding/json (unicode.ToUpper of
// unicode.ToLower, so that the Kelvin sign K is k and ſ is s, and İ is i),
// unicode.SimpleFold's orbits (strings.EqualFold) and .NET's comparison of
// upper cases (ı is i). Two names a reader of any of them can take for one
// another have equal folds.
func FoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		return r
	}
	r = unicode.ToUpper(unicode.ToLower(r))
	// The smallest rune of r's SimpleFold orbit stands for all of it.
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// Fold returns name with every rune mapped by FoldRune: two member names
// are one to a case-insensitive reader when their folds are equal.
func Fold(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			b := make([]byte, i, len(name))
			copy(b, name)
			for _, r := range name[i:] {
				b = utf8.AppendRune(b, FoldRune(r))
			}
			return string(b)
		}
	}
	return name
}

// FoldEqual reports whether Fold(a) == Fold(b), without allocating.
func FoldEqual(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb && FoldRune(ra) != FoldRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == b
}

// foldDuplicate returns two members of m whose names fold alike, in
// order, if it has any.
func foldDuplicate(m map[string]any) (a, b string, dup bool) {
	if len(m) < 2 {
		return "", "", false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return foldDuplicateKeys(keys, false)
}

// foldDuplicateKeys returns two of the distinct names keys whose folds
// are equal, in order, if it has any. When ascii reports that every name
// is ASCII, only names of one length can fold alike (Fold maps a-z to A-Z
// and leaves every other ASCII byte alone), and the others are not
// compared.
func foldDuplicateKeys(keys []string, ascii bool) (a, b string, dup bool) {
	if len(keys) < 2 {
		return "", "", false
	}
	order := func(x, y string) (string, string, bool) {
		if x > y {
			x, y = y, x
		}
		return x, y, true
	}
	// Small objects, such as a receipt's, are compared pair by pair
	// without allocating; larger ones through a set of folds.
	if len(keys) <= 24 {
		for i, k := range keys {
			for _, o := range keys[:i] {
				if (!ascii || len(o) == len(k)) && FoldEqual(k, o) {
					return order(o, k)
				}
			}
		}
		return "", "", false
	}
	seen := make(map[string]string, len(keys))
	for _, k := range keys {
		f := Fold(k)
		if o, ok := seen[f]; ok {
			return order(o, k)
		}
		seen[f] = k
	}
	return "", "", false
}
