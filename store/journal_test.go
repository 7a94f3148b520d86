package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/docketlog/docket/receipts"
)

func journalOf(t *testing.T, s *Store, session string) ([]JournalEntry, []error) {
	t.Helper()
	var es []JournalEntry
	var errs []error
	for e, err := range s.Journal(session) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		es = append(es, e)
	}
	return es, errs
}

func TestJournalAppend(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	big := `{"content":"` + strings.Repeat("x", MaxJournalInput) + `"}`
	for _, tt := range []struct {
		name, input string
		omitted     string
	}{
		{"small", `{"command":"go test ./..."}`, ""},
		{"unicode", `{"file_path":"/p/é.go"}`, ""},
		{"shell", `{"command":"make <in >out && echo '&'"}`, ""},
		{"too large", big, OmittedTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := appendDecision(t, s, key, tt.name, receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolName: "Bash", ToolInput: []byte(tt.input)}})
			got, errs := journalOf(t, s, tt.name)
			if len(errs) > 0 || len(got) != 1 {
				t.Fatalf("Journal = %+v, %v; want one entry", got, errs)
			}
			e := got[0]
			if e.ReceiptHash != h.Hash || e.Sequence != 1 || e.SessionID != tt.name || e.Omitted != tt.omitted {
				t.Errorf("entry = %+v, want receipt %s sequence 1 omitted %q", e, h.Hash, tt.omitted)
			}
			if tt.omitted == "" && string(e.ToolInput) != tt.input {
				t.Errorf("entry input = %s, want %s", e.ToolInput, tt.input)
			}
			if raw, _ := os.ReadFile(s.journalPath(tt.name)); tt.omitted == "" && !bytes.Contains(raw, []byte(tt.input)) {
				t.Errorf("journal file %s does not hold the input as it is, %s", raw, tt.input)
			}
			if tt.omitted != "" && (e.ToolInput != nil || e.InputSize != int64(len(tt.input))) {
				t.Errorf("omitted entry = input %d bytes, size %d; want none and %d", len(e.ToolInput), e.InputSize, len(tt.input))
			}
			fi, err := os.Stat(s.journalPath(tt.name))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("journal file mode = %v, %v; want 0600", fi.Mode(), err)
			}
		})
	}
}

// A session's journal stops taking inputs at MaxJournalFile; the entries
// still name their receipts.
func TestJournalFull(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{}`)}})
	if err := os.Truncate(s.journalPath("s"), MaxJournalFile); err != nil { // sparse
		t.Fatal(err)
	}
	h := appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{"a":1}`)}})
	f, err := os.Open(s.journalPath("s"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(MaxJournalFile, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	tail, _ := io.ReadAll(f)
	e, err := parseJournalEntry(tail)
	if err != nil || e.Omitted != OmittedJournalFull || e.ReceiptHash != h.Hash || e.InputSize != 7 {
		t.Fatalf("last entry = %+v, %v; want journal_full for %s", e, err, h.Hash)
	}
}

// A journal others can read is refused, and the append with it: the
// project asked for inputs to be kept privately.
func TestJournalRefusesReadableFile(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{}`)}})
	if err := os.Chmod(s.journalPath("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Append("s", AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{}`)}}, func(l Link) ([]byte, error) {
		return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: l.Sequence,
			PreviousReceiptHash: l.Previous, HookEvent: "PreToolUse", Decision: receipts.Allow})
	})
	if err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("Append with a 0644 journal = %v, want a refusal", err)
	}
	if recs, _ := s.Receipts("s"); len(recs) != 1 {
		t.Errorf("chain has %d receipts, want 1: the refused append wrote nothing", len(recs))
	}
}

// A torn or edited line is an error for that line; the others are read.
func TestJournalReaderSkipsBadLines(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{"n":1}`)}})
	f, err := os.OpenFile(s.journalPath("s"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{\"receipt_hash\":\"sha256:00\",\"session_id\":\"s\",\"sequence\":2,\"unknown\":1}\nnot json\n")
	f.Close()
	appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{Journal: &JournalEntry{ToolInput: []byte(`{"n":2}`)}})
	got, errs := journalOf(t, s, "s")
	if len(got) != 2 || len(errs) != 2 || string(got[1].ToolInput) != `{"n":2}` {
		t.Fatalf("Journal = %+v, %v; want 2 entries and 2 errors", got, errs)
	}
	if got, errs := journalOf(t, s, "none"); len(got)+len(errs) != 0 {
		t.Errorf("Journal(no journal) = %v, %v; want nothing", got, errs)
	}
}

// FuzzParseJournalEntry checks that a journal line either is refused or
// reads the same once written again, its input in JCS form.
func FuzzParseJournalEntry(f *testing.F) {
	f.Add([]byte(`{"receipt_hash":"sha256:ab","session_id":"s","sequence":1,"tool_name":"Bash","tool_input":{"command":"ls"}}`))
	f.Add([]byte(`{"receipt_hash":"sha256:ab","session_id":"s","sequence":2,"omitted":"too_large","input_size":2000000}`))
	f.Add([]byte(`{"receipt_hash":"sha256:ab","session_id":"s","sequence":1,"tool_input":{"b":1,"a":[1.0,"\u00e9"]},"salt":"00ff"}`))
	f.Add([]byte(`{"receipt_hash":"x","session_id":"s","sequence":0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseJournalEntry(line)
		if err != nil {
			return
		}
		again, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal %+v: %v", e, err)
		}
		e2, err := parseJournalEntry(again)
		if err != nil {
			t.Fatalf("parseJournalEntry(%q) accepted, its marshaling %q refused: %v", line, again, err)
		}
		if again2, _ := json.Marshal(e2); !bytes.Equal(again, again2) {
			t.Fatalf("parseJournalEntry(%q) is not stable: %s vs %s", line, again, again2)
		}
	})
}

// BenchmarkWriteJournal is a micro-benchmark of what the local journal
// adds to an append when it is on: open, fstat, one O_APPEND write of an
// entry with a small input, close; no fsync.
//
//	go test -run '^$' -bench 'Append$|WriteJournal' -count 6 ./store
func BenchmarkWriteJournal(b *testing.B) {
	s := Open(b.TempDir())
	e := JournalEntry{ReceiptHash: "sha256:" + strings.Repeat("ab", 32), SessionID: "0b4e7c2a-5f3e-4c1d-9a8b-1234567890ab",
		ToolName: "Bash", Cwd: "/work/project", ToolInput: []byte(`{"command":"go test ./...","description":"run the tests"}`)}
	for b.Loop() {
		e.Sequence++
		if err := s.writeJournal(e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestJournalEntryMatches(t *testing.T) {
	input := []byte(`{"command":"ls"}`)
	salt := bytes.Repeat([]byte{7}, receipts.SaltSize)
	other := bytes.Repeat([]byte{8}, receipts.SaltSize)
	hash, commitment := receipts.InputHash(input), receipts.InputCommitment(salt, input)
	salted := JournalEntry{ToolInput: input, Salt: hex.EncodeToString(salt)}
	tests := []struct {
		name              string
		e                 JournalEntry
		inputHash, commit string
		want              bool
	}{
		{name: "hash", e: JournalEntry{ToolInput: input}, inputHash: hash, want: true},
		{name: "hash of another input", e: JournalEntry{ToolInput: []byte(`{"command":"rm"}`)}, inputHash: hash},
		{name: "commitment", e: salted, commit: commitment, want: true},
		{name: "commitment, the wrong salt", e: JournalEntry{ToolInput: input, Salt: hex.EncodeToString(other)}, commit: commitment},
		{name: "commitment, no salt", e: JournalEntry{ToolInput: input}, commit: commitment},
		{name: "commitment, a short salt", e: JournalEntry{ToolInput: input, Salt: "0707"}, commit: receipts.InputCommitment([]byte{7, 7}, input)},
		{name: "commitment, a salt not hex", e: JournalEntry{ToolInput: input, Salt: "zz"}, commit: commitment},
		{name: "commitment, another input", e: JournalEntry{ToolInput: []byte(`{"command":"rm"}`), Salt: hex.EncodeToString(salt)}, commit: commitment},
		{name: "commitment wins over a hash", e: salted, inputHash: hash, commit: receipts.InputCommitment(other, input)},
		{name: "input omitted", e: JournalEntry{Omitted: OmittedTooLarge}, inputHash: receipts.InputHash(nil)},
		{name: "receipt commits to nothing", e: salted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Matches(tt.inputHash, tt.commit); got != tt.want {
				t.Errorf("Matches(%q, %q) = %v, want %v", tt.inputHash, tt.commit, got, tt.want)
			}
		})
	}
}
