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

// BenchmarkAppendHeld is BenchmarkAppend through an Appender (Hold), on
// tmpfs when there is one, so that the difference is the files' opening
// and parsing, not the fdatasync.
func BenchmarkAppendHeld(b *testing.B) {
	for _, held := range []bool{false, true} {
		b.Run(map[bool]string{false: "open", true: "held"}[held], func(b *testing.B) {
			dir := b.TempDir()
			if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
				tmp, err := os.MkdirTemp("/dev/shm", "docket-store-bench")
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { os.RemoveAll(tmp) })
				dir = tmp
			}
			s := Open(dir)
			if held {
				a, err := s.Hold("bench")
				if err != nil {
					b.Fatal(err)
				}
				defer a.Close()
			}
			key := testKey(b)
			for b.Loop() {
				appendDecision(b, s, key, "bench", receipts.Allow, AppendOptions{})
			}
		})
	}
}
