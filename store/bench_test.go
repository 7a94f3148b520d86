package store

import (
	"os"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// BenchmarkAppend is a micro-benchmark of the hooks' append path in process:
// one signed decision appended to a session chain (issuer lock and journal,
// chain lock, write, fdatasync, head, appends journal). The whole hook's
// figure is hook's BenchmarkHookPreVsBare.
//
//	go test -run '^$' -bench Append -count 6 ./store
func BenchmarkAppend(b *testing.B) {
	s := Open(b.TempDir())
	key := testKey(b)
	for b.Loop() {
		appendDecision(b, s, key, "bench", receipts.Allow, AppendOptions{})
	}
}

// BenchmarkJournalAppend is a micro-benchmark of what the appends journal
// adds to each append: opening the journal, one O_APPEND write, closing it.
func BenchmarkJournalAppend(b *testing.B) {
	s := Open(b.TempDir())
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		b.Fatal(err)
	}
	r := appendRecord{issuerSeq: 1, Ref: Ref{Session: "0b4e7c2a-5f3e-4c1d-9a8b-1234567890ab", Sequence: 1, offset: 1234}}
	for b.Loop() {
		if err := s.journalAppend(r); err != nil {
			b.Fatal(err)
		}
		r.issuerSeq++
	}
}
