package store

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"syscall"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// JournalDir is the directory of the local journal inside the store: one
// JSONL file per session (JournalEntry lines), mode 0600, never submitted.
const JournalDir = "journal"

// Bounds of the local journal. An input larger than MaxJournalInput, or one
// that would take a session's journal past MaxJournalFile, is not kept: its
// entry says so (Omitted) and records the input's size, so the journal of a
// session never grows past MaxJournalFile plus one small entry per call.
const (
	MaxJournalInput = 1 << 20
	MaxJournalFile  = 64 << 20
)

// Reasons an entry holds no input (JournalEntry.Omitted).
const (
	OmittedTooLarge    = "too_large"
	OmittedJournalFull = "journal_full"
)

// JournalEntry is one entry of the local journal: the exact input of one
// decided call, keyed by the chain hash of its decision receipt. It is
// kept in the project only and never submitted to the log.
type JournalEntry struct {
	// ReceiptHash is the chain hash ("sha256:…") of the receipt the entry
	// belongs to; Append fills it in, with SessionID and Sequence.
	ReceiptHash string `json:"receipt_hash"`
	SessionID   string `json:"session_id"`
	Sequence    int64  `json:"sequence"`
	ToolName    string `json:"tool_name,omitempty"`
	// Cwd is the agent's working directory for the call, when known.
	Cwd string `json:"cwd,omitempty"`
	// ToolInput is JCS(tool_input), the exact bytes whose SHA-256 is the
	// receipt's tool_input_hash; absent when Omitted is set.
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// Salt, when set, is the per-call salt (lowercase hex) of the
	// receipt's tool_input_commitment: kept here only, revealed by a
	// disclosure of this one call.
	Salt string `json:"salt,omitempty"`
	// Omitted says why ToolInput is absent (OmittedTooLarge,
	// OmittedJournalFull); InputSize is then its length in bytes.
	Omitted   string `json:"omitted,omitempty"`
	InputSize int64  `json:"input_size,omitempty"`
}

func (s *Store) journalPath(session string) string {
	return filepath.Join(s.dir, JournalDir, SessionName(session)+".jsonl")
}

// writeJournal writes entry e of the receipt just built, as one line of its
// session's journal, before the receipt's own line is written and fsynced.
// It has no fsync of its own: the journal is made durable before any of its
// session's receipts is submitted (syncJournal), so a receipt in the log
// always has its entry on disk; a power loss before that can lose entries
// of receipts that are still local, never the receipts. It is on the hook's
// path: open, fstat, write, close.
func (s *Store) writeJournal(e JournalEntry) error {
	path := s.journalPath(e.SessionID)
	fd, err := openJournal(path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = writeJournalTo(fd, path, e, nil)
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// openJournal opens (creating it and its directory as needed) a session's
// journal for appending, and returns its descriptor.
func openJournal(path string) (int, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, syscall.ENOENT) {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
		}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// writeJournalTo writes e as one line to the journal open as fd (whose
// path is path), in one write(2), unless the file is readable by others.
// It encodes into buf's storage and returns the buffer for reuse. An
// error that names a journal no longer linked (deleted or replaced) is
// errJournalGone: the caller opens the path again.
func writeJournalTo(fd int, path string, e JournalEntry, buf *bytes.Buffer) (*bytes.Buffer, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return buf, err
	}
	if st.Nlink == 0 {
		return buf, errJournalGone
	}
	if st.Mode&0o077 != 0 {
		return buf, fmt.Errorf("%s is readable by others (mode %#o): refusing to write inputs to it", path, st.Mode&0o777)
	}
	if size := int64(len(e.ToolInput)); size > MaxJournalInput || st.Size+size > MaxJournalFile {
		e.Omitted, e.InputSize, e.ToolInput = OmittedJournalFull, size, nil
		if size > MaxJournalInput {
			e.Omitted = OmittedTooLarge
		}
	}
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	// The input as it is: no HTML escaping of "<", ">" and "&".
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return buf, err
	}
	line := buf.Bytes()
	n, err := syscall.Write(fd, line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	return buf, err
}

// errJournalGone: a journal held open is no longer linked in the store.
var errJournalGone = errors.New("the journal file was removed")

// syncJournal makes the journal of each named session durable. It runs
// before receipts are submitted, off the hook's path.
func (s *Store) syncJournal(sessions ...string) error {
	seen := make(map[string]bool)
	for _, session := range sessions {
		if seen[session] {
			continue
		}
		seen[session] = true
		f, err := os.OpenFile(s.journalPath(session), os.O_WRONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		err = durable.Datasync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// Journal returns the entries of a session's journal in the order they
// were written (chain order). A session with no journal has no entries.
// A line that is not an entry (a torn last line after a crash, an edit)
// yields an error for that line, and iteration goes on.
func (s *Store) Journal(session string) iter.Seq2[JournalEntry, error] {
	return func(yield func(JournalEntry, error) bool) {
		f, err := os.Open(s.journalPath(session))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(JournalEntry{}, fmt.Errorf("journal: %w", err))
			return
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 64<<10)
		for n := 1; ; n++ {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				e, perr := parseJournalEntry(line)
				if perr != nil {
					perr = fmt.Errorf("journal %s line %d: %w", SessionName(session), n, perr)
				}
				if !yield(e, perr) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(JournalEntry{}, fmt.Errorf("journal: %w", err))
				return
			}
		}
	}
}

// maxJournalLine bounds one line the reader accepts: the largest input
// kept, escaped, plus the other members.
const maxJournalLine = 8*MaxJournalInput + 4096

// parseJournalEntry reads one journal line strictly: the members of
// JournalEntry only, and an input that is the JCS form it must be.
func parseJournalEntry(line []byte) (JournalEntry, error) {
	var e JournalEntry
	if len(line) > maxJournalLine {
		return e, errors.New("entry too long")
	}
	v, err := strictjson.Parse(bytes.TrimSpace(line))
	if err != nil {
		return e, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return e, errors.New("entry is not an object")
	}
	input, hasInput := m["tool_input"]
	delete(m, "tool_input")
	if err := strictjson.Decode(m, &e, strictjson.DisallowUnknown); err != nil {
		return e, err
	}
	if hasInput {
		if _, ok := input.(map[string]any); !ok {
			return e, errors.New("tool_input is not an object")
		}
		canon, err := strictjson.Canonicalize(input)
		if err != nil {
			return e, fmt.Errorf("tool_input: %w", err)
		}
		e.ToolInput = canon
	}
	if e.ReceiptHash == "" || e.SessionID == "" || e.Sequence < 1 {
		return e, errors.New("entry lacks receipt_hash, session_id or sequence")
	}
	return e, nil
}

// Matches reports whether the entry holds the input a receipt commits to:
// the input whose SHA-256 is the receipt's tool_input_hash, or, for a
// receipt of the salted mode (docket init -commit-inputs), the salt and
// input whose tool_input_commitment it carries. A receipt with neither, or
// an entry without its input, matches nothing.
func (e JournalEntry) Matches(inputHash, commitment string) bool {
	if e.ToolInput == nil {
		return false
	}
	switch {
	case commitment != "":
		salt, err := hex.DecodeString(e.Salt)
		return err == nil && len(salt) == receipts.SaltSize && receipts.InputCommitment(salt, e.ToolInput) == commitment
	case inputHash != "":
		return receipts.InputHash(e.ToolInput) == inputHash
	}
	return false
}
