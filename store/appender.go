package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/docketlog/docket/internal/durable"
)

// An Appender appends to one session's chain while holding the files an
// append uses open between appends: the issuer lock and counter, the
// chain, its head state, the appends journal and the input journal. A
// process that appends many receipts to one session (the MCP relay) saves
// their opens and closes, and the parsing of what it wrote itself; a hook
// process appends once and uses Store.Append.
//
// It changes neither what is locked nor what is fsynced: every append
// takes the issuer lock, then the chain's, with flock(2), as Store.Append
// does, releases them when it returns, and fdatasyncs the receipt before
// it returns. Other processes (hooks, docket sync, another relay) append
// to the same issuer and the same chain concurrently and stay correct:
// the counter and the head are read again under the locks at every append,
// and are parsed only when they hold something other than what this
// Appender wrote. A held file that was deleted or replaced (by a rename
// over it) is opened again before it is used; the chain is also checked
// against its path, so that a chain moved aside is not written to either.
//
// An Appender is safe for concurrent use; its appends are serialized.
type Appender struct {
	s    *Store
	name string // SessionName of the session

	mu     sync.Mutex // guards the fields below
	closed bool
	issuer issuerCounter
	chain  *os.File
	head   *os.File
	// chainID is the file chain is.
	chainID    fileID
	cache      headCache
	appends    int // the appends journal's descriptor, -1 when closed
	journal    int // the session's input journal's descriptor, -1 when closed
	journalBuf *bytes.Buffer

	// recent is set for an Appender the store opened itself (HoldRecent);
	// used is when it last appended. Both are guarded by the store's
	// heldMu.
	recent bool
	used   time.Time
}

// Hold opens an Appender for session and routes the store's appends to
// the session (Append, and so gate.Gate's) through it until it is closed.
// Hold does no I/O: the files are opened by the first append. A session
// is held by one Appender at a time in a Store.
//
// A session the store holds itself (HoldRecent) is handed over: its
// Appender is closed.
func (s *Store) Hold(session string) (*Appender, error) {
	name := SessionName(session)
	var recent *Appender
	defer func() {
		if recent != nil {
			_ = recent.Close() // takes heldMu itself
		}
	}()
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if h := s.held[name]; h != nil {
		if !h.recent {
			return nil, fmt.Errorf("session %s is already held", name)
		}
		recent = h
	}
	a := &Appender{s: s, name: name, appends: -1, journal: -1}
	a.issuer = issuerCounter{s: s, held: true}
	if s.held == nil {
		s.held = make(map[string]*Appender)
	}
	s.held[name] = a
	return a, nil
}

// HoldRecent makes the store hold the files of the n sessions it appended
// to last open between appends, each through an Appender of its own (as
// Hold), for a process that appends to many sessions over a long time: the
// gate daemon (docket hookd). An append to a session no Appender holds
// holds it, and closes the Appender HoldRecent opened that appended least
// recently when more than n are open. Sessions held with Hold are not
// counted and never closed by the store. n ≤ 0 holds no more sessions;
// ReleaseIdle(0) closes those held.
func (s *Store) HoldRecent(n int) {
	s.heldMu.Lock()
	s.holdRecent = n
	s.heldMu.Unlock()
}

// ReleaseIdle closes the Appenders HoldRecent opened that have not appended
// for idle (all of them when idle ≤ 0), and returns how many it closed. A
// session's next append opens its files again.
func (s *Store) ReleaseIdle(idle time.Duration) int {
	now := time.Now()
	var idleOnes []*Appender
	s.heldMu.Lock()
	for _, a := range s.held {
		if a.recent && (idle <= 0 || now.Sub(a.used) >= idle) {
			idleOnes = append(idleOnes, a)
		}
	}
	s.heldMu.Unlock()
	for _, a := range idleOnes {
		_ = a.Close()
	}
	return len(idleOnes)
}

// holder returns the Appender holding session, nil when none does. With
// HoldRecent, a session none holds is held from now on, and the Appender
// that appended least recently closed when that makes too many.
func (s *Store) holder(session string) *Appender {
	name := SessionName(session)
	var evict *Appender
	defer func() {
		if evict != nil {
			_ = evict.Close() // takes heldMu itself
		}
	}()
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if a := s.held[name]; a != nil || s.holdRecent <= 0 {
		if a != nil && a.recent {
			a.used = time.Now()
		}
		return a
	}
	a := &Appender{s: s, name: name, appends: -1, journal: -1, recent: true, used: time.Now()}
	a.issuer = issuerCounter{s: s, held: true}
	if s.held == nil {
		s.held = make(map[string]*Appender)
	}
	n := 0
	for _, h := range s.held {
		if h.recent {
			n++
			if evict == nil || h.used.Before(evict.used) {
				evict = h
			}
		}
	}
	if n < s.holdRecent {
		evict = nil
	} else {
		// Out of the map before the lock is let go, so that no one sees
		// more than n held; its files are closed once its append is done.
		delete(s.held, evict.name)
	}
	s.held[name] = a
	return a
}

// errClosed refuses an append through a closed Appender.
var errClosed = errors.New("appending receipt: the session's appender is closed")

// Append appends one receipt to the session's chain as Store.Append does.
func (a *Appender) Append(opts AppendOptions, build func(Link) ([]byte, error)) (Head, error) {
	return a.append(a.name, opts, build)
}

// append appends a receipt of session, whose SessionName is a's.
func (a *Appender) append(session string, opts AppendOptions, build func(Link) ([]byte, error)) (Head, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return Head{}, errClosed
	}
	ic := &a.issuer
	if err := ic.acquire(session); err != nil {
		return Head{}, fmt.Errorf("appending receipt: %w", err)
	}
	defer ic.release()
	head, off, err := a.appendChain(session, opts, ic.next, build)
	if err != nil {
		return head, err
	}
	// Still under the issuer lock, as in Store.Append.
	_ = a.writeAppends(appendRecord{issuerSeq: ic.next, Ref: Ref{Session: a.name, Sequence: head.Sequence, offset: off}})
	ic.done(session)
	return head, nil
}

// appendChain is Store.appendChain on the held files.
func (a *Appender) appendChain(session string, opts AppendOptions, issuerSeq int64, build func(Link) ([]byte, error)) (Head, int64, error) {
	size, err := a.lockChain()
	if err != nil {
		return Head{}, 0, err
	}
	defer durable.Unlock(a.chain)
	headPath := a.s.headPath(a.name)
	if a.head != nil && !linked(a.head) {
		a.head.Close()
		a.head, a.cache.written = nil, nil
	}
	if a.head == nil {
		hf, err := openCreate(headPath)
		if err != nil {
			return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
		}
		a.head, a.cache.written = hf, nil
	}
	ca := chainAppend{s: a.s, session: session, f: a.chain, hf: a.head, size: size, journal: a.writeJournal, held: &a.cache}
	return ca.run(opts, issuerSeq, build)
}

// lockChain locks the held chain, opening it again when its path names
// another file, and returns its size.
func (a *Appender) lockChain() (int64, error) {
	path := a.s.ChainPath(a.name)
	for {
		if a.chain == nil {
			f, err := openCreate(path)
			if err != nil {
				return 0, fmt.Errorf("appending receipt: %w", err)
			}
			if a.chainID, err = idOf(f); err != nil {
				f.Close()
				return 0, fmt.Errorf("appending receipt: %w", err)
			}
			a.chain, a.cache.written = f, nil
		}
		if err := durable.Lock(a.chain); err != nil {
			return 0, fmt.Errorf("locking chain: %w", err)
		}
		var st syscall.Stat_t
		err := syscall.Stat(path, &st)
		if err == nil && a.chainID.is(&st) {
			return st.Size, nil
		}
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			durable.Unlock(a.chain)
			return 0, fmt.Errorf("appending receipt: %w", err)
		}
		a.chain.Close() // another file, or none: open the path again
		a.chain = nil
	}
}

// writeJournal writes the input journal's entry on the held descriptor.
func (a *Appender) writeJournal(e JournalEntry) error {
	path := a.s.journalPath(e.SessionID)
	for range 2 {
		if a.journal < 0 {
			fd, err := openJournal(path)
			if err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			a.journal = fd
		}
		var err error
		a.journalBuf, err = writeJournalTo(a.journal, path, e, a.journalBuf)
		if !errors.Is(err, errJournalGone) {
			if err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			return nil
		}
		syscall.Close(a.journal)
		a.journal = -1
	}
	return fmt.Errorf("journal: %w", errJournalGone)
}

// writeAppends writes r to the appends journal on the held descriptor.
func (a *Appender) writeAppends(r appendRecord) error {
	if a.appends >= 0 {
		var st syscall.Stat_t
		if syscall.Fstat(a.appends, &st) != nil || st.Nlink == 0 {
			syscall.Close(a.appends)
			a.appends = -1
		}
	}
	if a.appends < 0 {
		fd, err := a.s.openAppends()
		if err != nil {
			return err
		}
		a.appends = fd
	}
	return writeAppendRecord(a.appends, r)
}

// Close closes the held files and stops routing the session's appends
// through a; later appends open the files each time (Store.Append), and
// appends through a fail.
func (a *Appender) Close() error {
	a.s.heldMu.Lock()
	if a.s.held[a.name] == a {
		delete(a.s.held, a.name)
	}
	a.s.heldMu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.issuer.close()
	var errs []error
	for _, f := range []*os.File{a.chain, a.head} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	for _, fd := range []int{a.appends, a.journal} {
		if fd >= 0 {
			errs = append(errs, syscall.Close(fd))
		}
	}
	a.chain, a.head, a.appends, a.journal = nil, nil, -1, -1
	return errors.Join(errs...)
}

// A fileID is the device and inode of an open file.
type fileID struct{ dev, ino uint64 }

// idOf returns the fileID of f.
func idOf(f *os.File) (fileID, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}

// is reports whether st describes the file id.
func (id fileID) is(st *syscall.Stat_t) bool {
	return uint64(st.Dev) == id.dev && uint64(st.Ino) == id.ino
}

// linked reports whether f is still linked in its directory: a file held
// open that was deleted, or replaced by a rename, is not. (The chain is
// checked against its path itself, lockChain: a chain moved aside is not
// written to either.)
func linked(f *os.File) bool {
	var st syscall.Stat_t
	return syscall.Fstat(int(f.Fd()), &st) == nil && st.Nlink > 0
}
