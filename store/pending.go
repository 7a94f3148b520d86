package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/docketlog/docket/internal/durable"
)

// A Ref names one receipt of the store.
type Ref struct {
	// Session is the SessionName of the receipt's session.
	Session  string
	Sequence int64
	// offset is where the receipt's line starts in the session's chain.
	offset int64
}

// An Unproven receipt has no proof in the store.
type Unproven struct {
	Ref
	// Receipt is the receipt as its chain holds it (JCS bytes).
	Receipt []byte
}

// A Cursor is how far Pending has read: every receipt appended before it
// either has a proof or is carried by the cursor, to be looked at again.
// The zero Cursor is before the store's first receipt.
type Cursor struct {
	valid bool
	// issuerSeq is the last issuer_sequence appended before the cursor.
	issuerSeq int64
	// offset is the cursor's position in the appends journal.
	offset int64
	// carry is the receipts before the cursor still to prove.
	carry []Ref
}

// IssuerSequence returns the last issuer_sequence of a receipt appended
// before the cursor: with nothing carried, every receipt up to it has a
// proof.
func (c Cursor) IssuerSequence() int64 { return c.issuerSeq }

// Proven returns the cursor without the given receipts, which now have
// proofs in the store (PutProofs).
func (c Cursor) Proven(refs ...Ref) Cursor {
	done := make(map[Ref]bool, len(refs))
	for _, r := range refs {
		done[r] = true
	}
	c.carry = slices.DeleteFunc(slices.Clone(c.carry), func(r Ref) bool { return done[r] })
	return c
}

// Pending returns the receipts without a proof among those the cursor since
// carries and those appended after it, and the cursor after them, which
// carries every receipt returned: pass it Proven for those that get a
// proof. Its cost grows with the receipts returned, not with the store's
// history: it reads the appends journal from since on, and the receipts at
// the places the journal names.
//
// When since is the zero Cursor, or the journal does not account for every
// receipt appended after since (lost, torn or cut short by a crash, or
// written by a version without it), Pending reads every chain and every
// proof instead, and moves the proof files of earlier versions into the
// proof journals. On doubt it returns a receipt rather than not: submitting
// one again is harmless, the log deduplicates.
func (s *Store) Pending(since Cursor) ([]Unproven, Cursor, error) {
	snap, err := s.appendsSnapshot()
	if err != nil {
		return nil, Cursor{}, err
	}
	if !since.valid || since.offset > snap.size || since.issuerSeq > snap.last {
		return s.rescan(snap)
	}
	recs, err := s.readAppends(since.offset, snap.size)
	if err != nil {
		return s.rescan(snap)
	}
	refs := slices.Clone(since.carry)
	want := since.issuerSeq + 1
	for _, r := range recs {
		if r.issuerSeq <= since.issuerSeq {
			continue // before a compaction that did not finish
		}
		if r.issuerSeq != want {
			return s.rescan(snap)
		}
		want++
		refs = append(refs, r.Ref)
	}
	if want-1 != snap.last {
		return s.rescan(snap)
	}
	out, ok, err := s.readUnproven(refs)
	if err != nil {
		return nil, Cursor{}, err
	}
	if !ok {
		return s.rescan(snap)
	}
	return out, s.cursorAt(snap, out), nil
}

func (s *Store) cursorAt(snap appendsSnapshot, carry []Unproven) Cursor {
	c := Cursor{valid: true, issuerSeq: snap.last, offset: snap.size}
	for _, u := range carry {
		c.carry = append(c.carry, u.Ref)
	}
	return c
}

// An appendsSnapshot is the issuer counter and the appends journal's size,
// read together under the issuer lock: every receipt up to last is in its
// chain and, unless a crash cut the journal short, in the journal's first
// size bytes.
type appendsSnapshot struct{ last, size int64 }

func (s *Store) appendsSnapshot() (appendsSnapshot, error) {
	lock, err := s.issuerLock(durable.RLock)
	if err != nil {
		return appendsSnapshot{}, err
	}
	defer lock.Close()
	data, err := os.ReadFile(filepath.Join(s.dir, IssuerJournalFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return appendsSnapshot{}, fmt.Errorf("issuer journal: %w", err)
	}
	last, err := s.lastAllocated(data)
	if err != nil {
		return appendsSnapshot{}, err
	}
	size, err := s.appendsSize()
	if err != nil {
		return appendsSnapshot{}, fmt.Errorf("appends journal: %w", err)
	}
	return appendsSnapshot{last: last, size: size}, nil
}

// readUnproven reads the receipts refs name, leaving out duplicates and
// those whose proof is among the last ones of their session's proof
// journal (the strict mode stores proofs outside Sync). It reports false
// when a ref does not name a receipt where it says.
func (s *Store) readUnproven(refs []Ref) ([]Unproven, bool, error) {
	var out []Unproven
	seen := make(map[Ref]bool, len(refs))
	bySession := make(map[string][]Ref)
	var order []string
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		if bySession[r.Session] == nil {
			order = append(order, r.Session)
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	for _, name := range order {
		recent, err := s.recentProofs(name)
		if err != nil {
			return nil, false, err
		}
		f, err := os.Open(s.ChainPath(name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading chain: %w", err)
		}
		for _, r := range bySession[name] {
			if recent[r.Sequence] {
				continue
			}
			rec, err := readLineAt(f, r.offset)
			rec = bytes.TrimSpace(rec)
			if err != nil {
				f.Close()
				return nil, false, nil
			}
			if seq, err := sequenceOf(rec); err != nil || seq != r.Sequence {
				f.Close()
				return nil, false, nil
			}
			out = append(out, Unproven{Ref: r, Receipt: rec})
		}
		f.Close()
	}
	return out, true, nil
}

// maxReceiptLine bounds a chain line read by offset.
const maxReceiptLine = 1 << 20

// readLineAt reads the complete line that starts at off, without its newline.
func readLineAt(f *os.File, off int64) ([]byte, error) {
	var line []byte
	buf := make([]byte, 4096)
	for len(line) < maxReceiptLine {
		n, err := f.ReadAt(buf, off+int64(len(line)))
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append(line, buf[:i]...), nil
		}
		line = append(line, buf[:n]...)
		if err == io.EOF {
			return nil, errors.New("no complete line")
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, errors.New("line too long")
}

// recentProofs returns the sequence numbers of the proofs in the last
// tailWindow bytes of a session's proof journal.
func (s *Store) recentProofs(name string) (map[int64]bool, error) {
	tail, err := tailLines(s.proofJournalPath(name))
	if err != nil {
		return nil, fmt.Errorf("reading proofs: %w", err)
	}
	seqs := make(map[int64]bool)
	for line := range bytes.Lines(tail) {
		if _, p, err := parseJournalLine(line[:len(line)-1]); err == nil && p != nil {
			seqs[p.Sequence] = true
		}
	}
	return seqs, nil
}

// rescan is Pending the slow way: every chain, every proof.
func (s *Store) rescan(snap appendsSnapshot) ([]Unproven, Cursor, error) {
	names, err := s.Sessions()
	if err != nil {
		return nil, Cursor{}, err
	}
	var out []Unproven
	for _, name := range names {
		set, err := s.Proofs(name)
		if err != nil {
			return nil, Cursor{}, err
		}
		if err := s.migrateProofs(name, set); err != nil {
			return nil, Cursor{}, err
		}
		data, err := os.ReadFile(s.ChainPath(name))
		if err != nil {
			return nil, Cursor{}, fmt.Errorf("reading chain: %w", err)
		}
		var off int64
		for line := range bytes.Lines(data) {
			start := off
			off += int64(len(line))
			if line[len(line)-1] != '\n' {
				break // an append in progress
			}
			r := bytes.TrimSpace(line)
			if len(r) == 0 {
				continue
			}
			seq, err := sequenceOf(r)
			if err != nil {
				return nil, Cursor{}, badTail(s.ChainPath(name), err)
			}
			if !set.usable(seq) {
				out = append(out, Unproven{Ref: Ref{Session: name, Sequence: seq, offset: start}, Receipt: r})
			}
		}
	}
	return out, s.cursorAt(snap, out), nil
}

// The sync cursor: where the last docket sync stopped.
const cursorFile = "sync.cursor"

type cursorJSON struct {
	IssuerSequence int64     `json:"issuer_sequence"`
	Offset         int64     `json:"offset"`
	Unproven       []refJSON `json:"unproven,omitempty"`
}

type refJSON struct {
	Session  string `json:"session"`
	Sequence int64  `json:"sequence"`
	Offset   int64  `json:"offset"`
}

// loadCursor returns the cursor the last sync saved, or the zero Cursor
// when there is none or it cannot be read (Pending then reads the chains).
func (s *Store) loadCursor() Cursor {
	data, err := os.ReadFile(filepath.Join(s.dir, cursorFile))
	if err != nil {
		return Cursor{}
	}
	var cj cursorJSON
	if json.Unmarshal(data, &cj) != nil || cj.IssuerSequence < 0 || cj.Offset < 0 {
		return Cursor{}
	}
	c := Cursor{valid: true, issuerSeq: cj.IssuerSequence, offset: cj.Offset}
	for _, r := range cj.Unproven {
		if !safeName(r.Session) || r.Sequence < 1 || r.Offset < 0 {
			return Cursor{}
		}
		c.carry = append(c.carry, Ref{Session: r.Session, Sequence: r.Sequence, offset: r.Offset})
	}
	return c
}

// saveCursor writes the cursor durably. It is called only once the proofs
// the cursor no longer carries are durable in their journals, so a crash
// leaves a cursor that is behind the proofs, never ahead of them.
func (s *Store) saveCursor(c Cursor) error {
	cj := cursorJSON{IssuerSequence: c.issuerSeq, Offset: c.offset}
	for _, r := range c.carry {
		cj.Unproven = append(cj.Unproven, refJSON{Session: r.Session, Sequence: r.Sequence, Offset: r.offset})
	}
	data, err := json.Marshal(cj)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(s.dir, cursorFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving the sync cursor: %w", err)
	}
	return nil
}

func (c Cursor) equal(d Cursor) bool {
	return c.valid == d.valid && c.issuerSeq == d.issuerSeq && c.offset == d.offset && slices.Equal(c.carry, d.carry)
}

// compactAt is the appends journal's size past which a sync that leaves
// nothing carried empties it (a variable for tests).
var compactAt int64 = 1 << 20

// compactAppends empties the appends journal when the cursor c, which
// carries nothing, is at its end: the cursor is first saved at offset 0
// (Pending skips the records it already passed, by issuer_sequence), then
// the journal truncated, both under the issuer lock so that no append
// comes between. It returns the cursor to go on with.
func (s *Store) compactAppends(c Cursor) (Cursor, error) {
	if len(c.carry) > 0 || c.offset < compactAt {
		return c, nil
	}
	lock, err := s.issuerLock(durable.Lock)
	if err != nil {
		return c, err
	}
	defer lock.Close()
	size, err := s.appendsSize()
	if err != nil || size != c.offset {
		return c, err // appended to since: next time
	}
	z := c
	z.offset = 0
	if err := s.saveCursor(z); err != nil {
		return c, err
	}
	if err := os.Truncate(filepath.Join(s.dir, AppendsFile), 0); err != nil {
		return z, fmt.Errorf("appends journal: %w", err)
	}
	return z, nil
}
