package store

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// Names of the issuer-wide counter's files in the store directory.
const (
	IssuerLockFile    = "issuer.lock"
	IssuerJournalFile = "issuer.seq"
)

// issuerJournal is the issuer-wide counter (DESIGN §3.1 issuer_sequence):
// the last number allocated, the session it went to, and whether the
// receipt carrying it is known to be in that session's chain.
type issuerJournal struct {
	Last    int64  `json:"last"`
	Session string `json:"session"`
	Done    bool   `json:"done,omitempty"`
	// Boot is the kernel's boot id when the journal was written (Linux).
	// A write survives the death of the process that made it, but not a
	// crash of the machine, so the journal is trusted without fsync only
	// within the boot that wrote it; after a reboot the counter is rebuilt
	// from the chains, whose appends are fsynced.
	Boot string `json:"boot,omitempty"`
}

// bootID returns the kernel's boot id, or "" where there is none to read:
// the journal is then fsynced at every write.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// issuerCounter is the issuer-wide counter held under its lock.
type issuerCounter struct {
	s    *Store
	lock *os.File
	j    *os.File
	size int // of the journal, at least
	next int64

	// held is set for an Appender's counter, whose lock and journal stay
	// open between appends (acquire, release); buf is reused to read the
	// journal, and written is
	// what the journal held after this counter's last write (nil when
	// unknown), writtenDone whether that was a done note: when the
	// journal still holds it, nobody allocated since.
	held         bool
	buf, written []byte
	writtenDone  bool
}

// allocIssuerSequence takes the issuer lock and allocates the next
// issuer_sequence for a receipt of session. The number is journaled before
// the receipt is written, so that a crash can neither hand the same number
// to two receipts (an equivocation an auditor would flag) nor lose one
// silently: when the journaled receipt is not in its chain after a crash,
// its number is allocated again, and after a reboot the counter is rebuilt
// from the chains (see issuerJournal.Boot). The caller writes the receipt,
// then calls done, and finally release.
func (s *Store) allocIssuerSequence(session string) (*issuerCounter, error) {
	lock, err := s.issuerLock(durable.Lock)
	if err != nil {
		return nil, err
	}
	c := &issuerCounter{s: s, lock: lock}
	if err := c.load(session); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

func (c *issuerCounter) load(session string) error {
	path := filepath.Join(c.s.dir, IssuerJournalFile)
	if c.j != nil && !linked(c.j) {
		// The held journal is no longer the store's (deleted or
		// replaced): what it holds says nothing of the store's counter.
		c.j.Close()
		c.j, c.written = nil, nil
	}
	if c.j == nil {
		j, err := openRW(path)
		if err != nil {
			return fmt.Errorf("issuer journal: %w", err)
		}
		c.j, c.size = j, 0
	}
	if c.buf == nil {
		c.buf = make([]byte, 4096)
	}
	data, err := readSmall(c.j, c.buf)
	if err != nil {
		return fmt.Errorf("issuer journal: %w", err)
	}
	c.size = len(data)
	var last int64
	if c.written != nil && c.writtenDone && bytes.Equal(data, c.written) {
		last = c.next // this counter's own last allocation, done
	} else if last, err = c.s.lastAllocated(data); err != nil {
		return err
	}
	c.next = last + 1
	return c.write(issuerJournal{Last: c.next, Session: session}, bootID() == "")
}

// lastAllocated returns the last issuer_sequence whose receipt is in its
// chain, from the journal's contents data (read under the issuer lock).
func (s *Store) lastAllocated(data []byte) (int64, error) {
	var jr issuerJournal
	switch {
	case len(data) == 0, json.Unmarshal(data, &jr) != nil, jr.Boot != bootID():
		// No journal yet (receipts that predate the counter carry none),
		// a torn one, or one from before a reboot: the highest number any
		// chain holds.
		return s.maxIssuerSequence()
	case !jr.Done:
		// The receipt journaled last may not have reached its chain.
		last, err := s.lastIssuerSequence(jr.Session)
		if err != nil {
			return 0, err
		}
		if last != jr.Last {
			return jr.Last - 1, nil // it did not: its number is free again
		}
	}
	return jr.Last, nil
}

// issuerLock opens the issuer lock file (and the store directory, if
// need be) and takes the lock with lockFn.
func (s *Store) issuerLock(lockFn func(*os.File) error) (*os.File, error) {
	lock, err := openCreate(filepath.Join(s.dir, IssuerLockFile))
	if err != nil {
		return nil, fmt.Errorf("issuer lock: %w", err)
	}
	if err := lockFn(lock); err != nil {
		lock.Close()
		return nil, fmt.Errorf("issuer lock: %w", err)
	}
	return lock, nil
}

func (c *issuerCounter) write(jr issuerJournal, sync bool) error {
	jr.Boot = bootID()
	b := jr.appendJSON(c.written[:0])
	c.written = nil // unknown until the write is complete
	// A record shorter than the one it replaces (an allocation after a
	// done note) is padded with spaces, which JSON readers skip, rather
	// than followed by a truncate(2).
	for len(b) < c.size-1 && c.size <= maxIssuerPad {
		b = append(b, ' ')
	}
	b = append(b, '\n')
	if _, err := c.j.WriteAt(b, 0); err != nil {
		return fmt.Errorf("issuer journal: %w", err)
	}
	if len(b) < c.size {
		if err := c.j.Truncate(int64(len(b))); err != nil {
			return fmt.Errorf("issuer journal: %w", err)
		}
	}
	c.size = len(b)
	if sync {
		if err := durable.Datasync(c.j); err != nil {
			return fmt.Errorf("issuer journal: %w", err)
		}
	}
	if c.held {
		c.written, c.writtenDone = b, jr.Done
	}
	return nil
}

// maxIssuerPad bounds the issuer journal that write pads instead of
// truncating: a longer one (not written by write) is cut.
const maxIssuerPad = 512

// appendJSON appends jr's JSON form, the members json.Marshal would write
// (json.Unmarshal reads it back).
func (jr issuerJournal) appendJSON(b []byte) []byte {
	b = append(b, `{"last":`...)
	b = strconv.AppendInt(b, jr.Last, 10)
	b = append(b, `,"session":`...)
	b = appendJSONString(b, jr.Session)
	if jr.Done {
		b = append(b, `,"done":true`...)
	}
	if jr.Boot != "" {
		b = append(b, `,"boot":`...)
		b = appendJSONString(b, jr.Boot)
	}
	return append(b, '}')
}

// done notes that the receipt carrying the allocated number is in its
// chain. It is not fsynced: a lost note costs the next allocation a look
// at that chain's last receipt.
func (c *issuerCounter) done(session string) {
	_ = c.write(issuerJournal{Last: c.next, Session: session, Done: true}, false)
}

func (c *issuerCounter) release() {
	if c.held {
		durable.Unlock(c.lock)
		return
	}
	if c.j != nil {
		c.j.Close()
	}
	c.lock.Close() // releases the lock
}

// acquire takes the issuer lock on a held counter's lock file and
// allocates the next issuer_sequence for a receipt of session, as
// allocIssuerSequence does; release unlocks it and keeps the files open.
// A lock file that is no longer the store's (deleted or replaced) is
// opened again: a lock on a file others do not open excludes nobody.
func (c *issuerCounter) acquire(session string) error {
	path := filepath.Join(c.s.dir, IssuerLockFile)
	for {
		if c.lock == nil {
			lock, err := openCreate(path)
			if err != nil {
				return fmt.Errorf("issuer lock: %w", err)
			}
			c.lock = lock
		}
		if err := durable.Lock(c.lock); err != nil {
			return fmt.Errorf("issuer lock: %w", err)
		}
		if linked(c.lock) {
			break
		}
		c.lock.Close()
		c.lock = nil
	}
	if err := c.load(session); err != nil {
		durable.Unlock(c.lock)
		return err
	}
	return nil
}

// appendJSONString appends s as a JSON string that json.Unmarshal reads
// as it reads json.Marshal's.
func appendJSONString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		q, _ := json.Marshal(s) // each invalid byte becomes U+FFFD
		return append(b, q...)
	}
	return strictjson.AppendString(b, s)
}

// close closes a held counter's files.
func (c *issuerCounter) close() {
	for _, f := range []*os.File{c.lock, c.j} {
		if f != nil {
			f.Close()
		}
	}
	c.lock, c.j, c.written = nil, nil, nil
}

// lastIssuerSequence returns the issuer_sequence of a chain's last receipt
// (0 if none).
func (s *Store) lastIssuerSequence(session string) (int64, error) {
	f, err := os.Open(s.ChainPath(session))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	tail, _, err := readTail(f, fi.Size())
	if err != nil {
		return 0, err
	}
	lines := receipts.SplitLines(tail)
	for i := len(lines) - 1; i >= 0; i-- {
		if n, ok := issuerSequenceOf(lines[i]); ok {
			return n, nil
		}
	}
	return 0, nil
}

// maxIssuerSequence returns the highest issuer_sequence at the end of any
// chain: the slow path, for a store without a readable journal.
func (s *Store) maxIssuerSequence() (int64, error) {
	names, err := s.Sessions()
	if err != nil {
		return 0, err
	}
	var top int64
	for _, n := range names {
		last, err := s.lastIssuerSequence(n)
		if err != nil {
			return 0, err
		}
		top = max(top, last)
	}
	return top, nil
}

func issuerSequenceOf(line []byte) (int64, bool) {
	r, err := receipts.Open(line, nil)
	if err != nil {
		return 0, false
	}
	return r.Payload.IssuerSequence, true
}

// IssuerSession is the session id of the chain of issuer checkpoints.
const IssuerSession = "docket-issuer"

// issuerCheckpoint appends an issuer checkpoint receipt with high-water
// mark hw to the issuer chain when receipts were signed since the last one
// and that one is older than every, and returns hw (0 when none was due).
// The caller read hw (issuerLast) before it found every receipt of the
// store logged, so every receipt up to hw is in the log: a monitor that
// finds one missing has found an omission, not a race.
func (s *Store) issuerCheckpoint(key ed25519.PrivateKey, every time.Duration, hw int64) (int64, error) {
	if hw == 0 {
		return 0, nil
	}
	prev := &receipts.Receipt{}
	if last, err := s.lastReceipt(IssuerSession); err == nil && last != nil {
		if r, err := receipts.Open(last, nil); err == nil {
			prev = r
		}
	}
	if prev.Payload.IssuerSequence >= hw {
		return 0, nil // nothing signed since the last checkpoint
	}
	if t, err := time.Parse(time.RFC3339, prev.Payload.IssuedAt); err == nil && time.Since(t) < every {
		return 0, nil
	}
	open, err := s.openSessions()
	if err != nil {
		return 0, err
	}
	_, err = s.Append(IssuerSession, AppendOptions{}, func(l Link) ([]byte, error) {
		return receipts.Sign(key, receipts.Payload{Type: receipts.TypeLifecycle, SessionID: IssuerSession,
			Sequence: l.Sequence, PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence,
			LifecycleEvent: receipts.LifecycleIssuerCheckpoint, IssuerHighWater: hw, OpenSessions: open})
	})
	if err != nil {
		return 0, fmt.Errorf("issuer checkpoint: %w", err)
	}
	return hw, nil
}

// openSessions returns the ids of the sessions whose chain does not end
// with a session_end receipt. It reads the end of each chain only.
func (s *Store) openSessions() ([]string, error) {
	names, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	var open []string
	for _, n := range names {
		if n == SessionName(IssuerSession) {
			continue
		}
		last, err := s.lastReceipt(n)
		if err != nil || last == nil {
			continue
		}
		if end, err := receipts.Open(last, nil); err == nil && end.Payload.LifecycleEvent != receipts.LifecycleSessionEnd {
			open = append(open, end.Payload.SessionID)
		}
	}
	return open, nil
}

// lastReceipt returns the last complete receipt of a session's chain, read
// from its tail (nil for an empty or missing chain).
func (s *Store) lastReceipt(session string) ([]byte, error) {
	tail, err := tailLines(s.ChainPath(session))
	if err != nil {
		return nil, err
	}
	lines := receipts.SplitLines(tail)
	if len(lines) == 0 {
		return nil, nil
	}
	return lines[len(lines)-1], nil
}

// tailLines returns the complete lines among the last tailWindow bytes of
// a file (nil when it does not exist).
func tailLines(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	tail, off, err := readTail(f, fi.Size())
	if err != nil {
		return nil, err
	}
	if off > 0 {
		tail = tail[bytes.IndexByte(tail, '\n')+1:]
	}
	return tail[:bytes.LastIndexByte(tail, '\n')+1], nil
}
