package strictjson

import "testing"

// The names and common values of receipts are parsed without an
// allocation each, and read as any other string.
func TestInternedStrings(t *testing.T) {
	doc := []byte(`{"payload":{"type":"protectmcp:decision","decision":"allow","other":"x"},"signature":{"alg":"EdDSA"}}`)
	v, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if got := m["payload"].(map[string]any)["type"]; got != "protectmcp:decision" {
		t.Errorf("payload.type = %v, want protectmcp:decision", got)
	}
	// The names are not allocated; the values are only boxed.
	if n := testing.AllocsPerRun(100, func() { Parse(doc) }); n > 11 {
		t.Errorf("Parse allocates %v times, want at most 11 (19 without interning)", n)
	}
}
