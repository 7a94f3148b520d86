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
	// Neither the names nor the common values are allocated, nor boxed.
	if n := testing.AllocsPerRun(100, func() { Parse(doc) }); n > 8 {
		t.Errorf("Parse allocates %v times, want at most 8 (19 without interning)", n)
	}
}

// The switch and the table of intern hold one list, in one order.
func TestInternTables(t *testing.T) {
	for i, v := range internedValues {
		n, ok := v.(string)
		if !ok {
			t.Fatalf("internedValues[%d] = %v, not a string", i, v)
		}
		if got := internIndex([]byte(n)); got != i {
			t.Errorf("internIndex(%q) = %d, want %d", n, got, i)
		}
	}
	for _, s := range []string{"", "Allow", "payload ", "al\\u006cow"} {
		if got := internIndex([]byte(s)); got != -1 {
			t.Errorf("internIndex(%q) = %d, want -1", s, got)
		}
	}
}
