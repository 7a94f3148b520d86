package receipts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addVectorSeeds seeds a fuzz target with every JSON vector file.
func addVectorSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(vectors, "*", "*.json"))
	more, _ := filepath.Glob(filepath.Join(vectors, "*", "*", "*.json"))
	for _, name := range append(files, more...) {
		if b, err := os.ReadFile(name); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
}

// FuzzParse checks that Parse never panics and that JCS is a fixed point:
// canonical bytes re-parse and re-canonicalize to themselves.
func FuzzParse(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		c, err := Canonicalize(v)
		if err != nil {
			t.Fatalf("Canonicalize(Parse(%q)) = %v", data, err)
		}
		c2, err := CanonicalizeJSON(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("JCS is not a fixed point: %s -> %s (%v)", c, c2, err)
		}
		// The parser's own judgement that input is canonical must be right:
		// verification then hashes and verifies the input bytes as they are.
		if _, canonical, members, err := parseSpans(data); err == nil && canonical {
			if !bytes.Equal(c, data) {
				t.Fatalf("parseSpans called %q canonical; JCS is %q", data, c)
			}
			obj := v.(map[string]any)
			for k, span := range members {
				member, found := any(obj), true
				if _, top := obj[k]; top {
					member = obj[k]
				} else {
					for _, part := range strings.SplitN(k, "\x00", 2) {
						m, ok := member.(map[string]any)
						if member, found = m[part]; !ok || !found {
							break
						}
					}
				}
				if !found {
					t.Fatalf("member span %q names no member", k)
				}
				mc, _ := Canonicalize(member)
				if !bytes.Equal(mc, data[span[0]:span[1]]) {
					t.Fatalf("member %q spans %q, JCS %q", k, data[span[0]:span[1]], mc)
				}
			}
		}
	})
}

// FuzzVerify checks that verification never panics and never calls a
// receipt valid without a trusted key.
func FuzzVerify(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if r := Verify(data, Options{}); r.Outcome != Undecidable {
			t.Fatalf("Verify(no keys) = %v, want undecidable", r.Outcome)
		}
		Verify(data, Options{Keys: PinnedKey(pub(conformanceKey))})
		VerifyChain([][]byte{data, data}, Options{Keys: PinnedKey(pub(conformanceKey))})
		ParseEntry(data)
	})
}
