package store

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseAppendRecord checks that a line of the appends journal either
// is refused or is exactly what marshal writes for what it parsed.
func FuzzParseAppendRecord(f *testing.F) {
	f.Add([]byte("12 3 4567 0b4e7c2a-5f3e-4c1d-9a8b-1234567890ab"))
	f.Add([]byte("1 1 0 s"))
	f.Add([]byte("01 1 0 s"))
	f.Add([]byte("1 1 0 ../x"))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := parseAppendRecord(line)
		if err != nil {
			return
		}
		if got := r.marshal(); !bytes.Equal(got, append(bytes.Clone(line), '\n')) {
			t.Fatalf("parseAppendRecord(%q) then marshal = %q", line, got)
		}
	})
}

// FuzzParseJournalLine checks that a line of a proof journal never makes
// the reader panic, and that a line it accepts says the same once written
// again.
func FuzzParseJournalLine(f *testing.F) {
	f.Add([]byte(`{"sequence":5,"index":12,"cp":"00112233445566778899aabbccddeeff","hashes":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}`))
	f.Add([]byte(`{"id":"00112233445566778899aabbccddeeff","checkpoint":"x\n"}`))
	f.Add([]byte(`{"sequence":5,"index":12,"checkpoint":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		cp, p, err := parseJournalLine(line)
		if err != nil {
			return
		}
		var again []byte
		if cp != nil {
			again, _ = json.Marshal(cp)
		} else {
			again, _ = json.Marshal(p)
		}
		cp2, p2, err := parseJournalLine(again)
		if err != nil {
			t.Fatalf("parseJournalLine(%q) accepted, its marshaling %q refused: %v", line, again, err)
		}
		a, _ := json.Marshal(cp2)
		b, _ := json.Marshal(p2)
		c, _ := json.Marshal(cp)
		d, _ := json.Marshal(p)
		if !bytes.Equal(a, c) || !bytes.Equal(b, d) {
			t.Fatalf("parseJournalLine(%q) is not stable: %s %s vs %s %s", line, a, b, c, d)
		}
	})
}
