package audit

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/docketlog/docket/internal/durable"
)

// An auditState is what docket audit -state DIR keeps between audits: the
// checkpoint it last read the log up to, the compact range of that tree,
// and the ledger of every entry below it (records.bin, calls.bin,
// execs.bin: fixed-size binary records, appended to; state.json: the rest).
// The next audit proves the log consistent with that checkpoint and reads
// only the entries after it. Without a directory it is an empty ledger.
//
// The state is the auditor's own: it is trusted as written. Files are
// appended and then state.json replaced atomically, so a crash between the
// two leaves records past state.json's counts, which are ignored.
type auditState struct {
	dir    string
	ledger *ledger
	rng    *compact.Range
	size   uint64 // entries read by earlier audits
	cp     string // the checkpoint they were read under
	calls  int    // calls and execs saved
	execs  int
	// pending links saved (version 4)
	pending int
	// executions settled as added saved (version 5)
	acted int
	// relinked: the records were loaded from a state before version 4 and
	// linked again; the next save writes them all
	relinked bool
}

type stateFile struct {
	Version    int      `json:"version"`
	Checkpoint string   `json:"checkpoint"`
	Size       uint64   `json:"size"`
	Range      [][]byte `json:"range,omitempty"`
	Calls      int      `json:"calls"`
	// FactsFrom is the first record saved with version 3's flags.
	FactsFrom uint64 `json:"facts_from,omitempty"`
	// Pending counts the records of pending.bin (version 4).
	Pending int `json:"pending,omitempty"`
	// Acted counts the records of acted.bin (version 5).
	Acted    int           `json:"acted,omitempty"`
	Execs    int           `json:"execs"`
	Issuers  []issuerJSON  `json:"issuers,omitempty"`
	Sessions []sessionJSON `json:"sessions,omitempty"`
	Bad      []badJSON     `json:"bad,omitempty"`
	BadMore  int           `json:"bad_more,omitempty"`
}

type issuerJSON struct {
	KID        string   `json:"kid"`
	PublicKey  []byte   `json:"public_key,omitempty"`
	Top        *topJSON `json:"top,omitempty"`
	Legacy     int      `json:"legacy,omitempty"`
	HighWater  int64    `json:"high_water,omitempty"`
	Checkpoint uint64   `json:"checkpoint,omitempty"`
	HasCP      bool     `json:"has_checkpoint,omitempty"`
}

type sessionJSON struct {
	Issuer   uint32   `json:"issuer"`
	Name     string   `json:"name"`
	Last     uint64   `json:"last,omitempty"`
	LastSeq  int64    `json:"last_seq,omitempty"`
	IssuedAt string   `json:"issued_at,omitempty"`
	HasLast  bool     `json:"has_last,omitempty"`
	Ended    bool     `json:"ended,omitempty"`
	Top      *topJSON `json:"top,omitempty"`
}

// topJSON is a chainTop (version 4).
type topJSON struct {
	Seq  int64  `json:"seq"`
	Hash []byte `json:"hash"`
}

func (t *topJSON) top() chainTop {
	if t == nil || len(t.Hash) != 32 {
		return chainTop{}
	}
	return chainTop{seq: t.Seq, hash: [32]byte(t.Hash), ok: true}
}

func topOf(t chainTop) *topJSON {
	if !t.ok {
		return nil
	}
	return &topJSON{t.seq, t.hash[:]}
}

type badJSON struct {
	Index   uint64 `json:"index"`
	Message string `json:"message"`
}

// stateVersion 2: the recs' flags hold observe mode's and reconciliation's
// facts (flagPreToolUse…flagReconciled), which version 1 records lack.
// Version 3: also flagAllow…flagOtherKey and each issuer's public key, the
// facts a presented chain is checked by without parsing it (presented.go);
// a version 2 state is read, and its records checked the long way.
// Version 4: records keep no previousReceiptHash (bytes 32 to 64 are zero)
// but flagFirst…flagBroken, chains their tops, and pending.bin the links
// not settled; an older state's records are linked again as they load.
// Version 5: acted.bin holds the executions whose decision was settled as
// they were added (ledger.acted), execs.bin only the others, and calls.bin
// lacks the fingerprints fp reads from their decisions; an older state,
// whose execs.bin and calls.bin hold them all, reads as it is.
const stateVersion = 5

const actedSize = 8

const (
	recSize  = 96
	callSize = 36 // also the size of a pending link
)

// openState opens the state in dir, with room for a log of capacity
// entries (ledger.reserve).
func openState(dir string, capacity uint64) (*auditState, error) {
	st := &auditState{dir: dir, ledger: newLedger(), rng: NewRange()}
	if dir == "" {
		return st, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return st, os.MkdirAll(dir, 0o755)
	} else if err != nil {
		return nil, fmt.Errorf("audit state: %w", err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil || (sf.Version < 2 || sf.Version > stateVersion) {
		return nil, fmt.Errorf("audit state %s: not a state this docket wrote (%v)", dir, err)
	}
	if st.rng, err = RestoreRange(sf.Size, sf.Range); err != nil {
		return nil, fmt.Errorf("audit state %s: %w", dir, err)
	}
	st.size, st.cp, st.calls, st.execs = sf.Size, sf.Checkpoint, sf.Calls, sf.Execs
	if sf.Version >= 4 {
		st.pending = sf.Pending
	}
	if sf.Version >= 5 {
		st.acted = sf.Acted
	}
	st.relinked = sf.Version < 4
	l := st.ledger
	l.factsFrom = sf.FactsFrom
	if sf.Version == 2 {
		l.factsFrom = sf.Size
	}
	for _, is := range sf.Issuers {
		if is.PublicKey != nil && len(is.PublicKey) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("audit state %s: issuer %s has a public key of %d bytes", dir, is.KID, len(is.PublicKey))
		}
		l.issuerIDs[is.KID] = uint32(len(l.issuers))
		l.issuers = append(l.issuers, issuerInfo{top: is.Top.top(), kid: is.KID, pub: is.PublicKey, legacy: is.Legacy, highWater: is.HighWater, checkpoint: is.Checkpoint, hasCP: is.HasCP})
	}
	for _, s := range sf.Sessions {
		if int(s.Issuer) >= len(l.issuers) {
			return nil, fmt.Errorf("audit state %s: session of issuer %d", dir, s.Issuer)
		}
		l.sessIDs[sessKey{s.Issuer, s.Name}] = uint32(len(l.sessions))
		l.sessions = append(l.sessions, sessionInfo{issuer: s.Issuer, name: s.Name, last: s.Last, lastSeq: s.LastSeq, issuedAt: s.IssuedAt, hasLast: s.HasLast, ended: s.Ended, top: s.Top.top()})
	}
	for _, b := range sf.Bad {
		l.bad.add(Finding{Kind: KindBadEntry, Index: b.Index, Message: b.Message, evidence: &Evidence{Kind: KindBadEntry, Entries: []EvidenceEntry{{Index: b.Index}}}})
	}
	for range sf.BadMore {
		l.bad.add(Finding{Kind: KindBadEntry})
	}
	l.reserve(max(capacity, sf.Size))
	err = readRecords(filepath.Join(dir, "records.bin"), int(sf.Size), recSize, func(b []byte) error {
		var r rec
		copy(r.hash[:], b[0:32])
		r.seq = int64(binary.LittleEndian.Uint64(b[64:]))
		r.iseq = int64(binary.LittleEndian.Uint64(b[72:]))
		r.issuer = binary.LittleEndian.Uint32(b[80:])
		r.session = binary.LittleEndian.Uint32(b[84:])
		r.flags = binary.LittleEndian.Uint32(b[88:])
		if r.flags&flagBad == 0 && (int(r.issuer) >= len(l.issuers) || int(r.session) >= len(l.sessions)) {
			return errors.New("a record names an issuer or session the state does not hold")
		}
		if sf.Version < 4 && r.flags&flagBad == 0 {
			// Linked again, in order, as it was added (ledger.link).
			r.flags &^= flagFirst | flagLinked | flagBroken
			l.link(&r, uint32(len(l.recs)), [32]byte(b[32:64]))
		}
		l.recs = append(l.recs, r)
		return nil
	})
	if err == nil && sf.Version >= 4 {
		err = readRecords(filepath.Join(dir, "pending.bin"), sf.Pending, callSize, func(b []byte) error {
			l.pending = append(l.pending, pendingLink{binary.LittleEndian.Uint32(b), [32]byte(b[4:36])})
			return nil
		})
	}
	if err == nil {
		err = readRecords(filepath.Join(dir, "calls.bin"), sf.Calls, callSize, func(b []byte) error {
			l.calls = append(l.calls, call{binary.LittleEndian.Uint32(b), [32]byte(b[4:36])})
			return nil
		})
	}
	if err == nil {
		err = readRecords(filepath.Join(dir, "execs.bin"), sf.Execs, callSize, func(b []byte) error {
			l.execs = append(l.execs, link{binary.LittleEndian.Uint32(b), [32]byte(b[4:36])})
			return nil
		})
	}
	if err == nil {
		err = readRecords(filepath.Join(dir, "acted.bin"), st.acted, actedSize, func(b []byte) error {
			x := resolved{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])}
			if x.dpos >= x.pos || uint64(x.pos) >= sf.Size {
				return errors.New("acted.bin links an execution to an entry not before it")
			}
			l.acted = append(l.acted, x)
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("audit state %s: %w", dir, err)
	}
	return st, nil
}

// readRecords reads the first n records of size bytes of a file.
func readRecords(path string, n, size int, each func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		if n == 0 && errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	b := make([]byte, size)
	for range n {
		if _, err := io.ReadFull(r, b); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if err := each(b); err != nil {
			return err
		}
	}
	return nil
}

// check compares the log's checkpoint with the one the state was read
// under. A log that went back, or signed a tree that does not extend it, is
// a fork finding, and nothing more is read.
func (st *auditState) check(ctx context.Context, cfg Config) (*Finding, error) {
	if st.size == 0 {
		return nil, nil
	}
	oldRoot, err := st.rng.GetRootHash(nil)
	if err != nil {
		return nil, fmt.Errorf("audit state: %w", err)
	}
	fork := func(msg string, ev *Evidence) *Finding {
		f := forkFinding(KindFork, msg, ev)
		return &f
	}
	switch {
	case cfg.Size < st.size:
		return fork(fmt.Sprintf("the log now serves size %d after an audit read it at size %d (-state %s)", cfg.Size, st.size, st.dir),
			&Evidence{Kind: KindFork, Checkpoints: []string{st.cp, string(cfg.Checkpoint)}}), nil
	case cfg.Size == st.size:
		if string(oldRoot) != string(cfg.Root) {
			return fork(fmt.Sprintf("the log signed two different roots for size %d", cfg.Size),
				&Evidence{Kind: KindFork, Checkpoints: []string{st.cp, string(cfg.Checkpoint)}}), nil
		}
		return nil, nil
	}
	pb, err := NewProofBuilder(ctx, cfg.Fetcher, cfg.Size)
	if err != nil {
		return nil, err
	}
	path, err := pb.ConsistencyProof(ctx, st.size, cfg.Size)
	if err != nil {
		return nil, fmt.Errorf("consistency proof: %w", err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, st.size, cfg.Size, path, oldRoot, cfg.Root); err != nil {
		ev, eerr := ForkEvidence(ctx, cfg.Fetcher, []byte(st.cp), st.size, cfg.Checkpoint, cfg.Size)
		if eerr != nil {
			return nil, eerr
		}
		return fork(fmt.Sprintf("the log's checkpoint of size %d is not consistent with its checkpoint of size %d an audit read before: %v", cfg.Size, st.size, err), ev), nil
	}
	return nil, nil
}

// save appends the records read since the state was opened and then
// replaces state.json.
func (st *auditState) save(cp []byte, size uint64) error {
	if st.dir == "" || size == st.size {
		return nil
	}
	l := st.ledger
	from := st.size
	if st.relinked {
		from = 0
	}
	err := appendRecords(filepath.Join(st.dir, "records.bin"), from, recSize, len(l.recs)-int(from), func(i int, b []byte) {
		r := &l.recs[int(from)+i]
		copy(b[0:32], r.hash[:])
		clear(b[32:64])
		binary.LittleEndian.PutUint64(b[64:], uint64(r.seq))
		binary.LittleEndian.PutUint64(b[72:], uint64(r.iseq))
		binary.LittleEndian.PutUint32(b[80:], r.issuer)
		binary.LittleEndian.PutUint32(b[84:], r.session)
		binary.LittleEndian.PutUint32(b[88:], r.flags&^flagDuplicate)
		clear(b[92:])
	})
	if err == nil {
		err = appendRecords(filepath.Join(st.dir, "pending.bin"), uint64(st.pending), callSize, len(l.pending)-st.pending, func(i int, b []byte) {
			x := &l.pending[st.pending+i]
			binary.LittleEndian.PutUint32(b, x.pos)
			copy(b[4:], x.prev[:])
		})
	}
	if err == nil {
		err = appendRecords(filepath.Join(st.dir, "calls.bin"), uint64(st.calls), callSize, len(l.calls)-st.calls, func(i int, b []byte) {
			x := &l.calls[st.calls+i]
			binary.LittleEndian.PutUint32(b, x.pos)
			copy(b[4:], x.fp[:])
		})
	}
	if err == nil {
		err = appendRecords(filepath.Join(st.dir, "execs.bin"), uint64(st.execs), callSize, len(l.execs)-st.execs, func(i int, b []byte) {
			x := &l.execs[st.execs+i]
			binary.LittleEndian.PutUint32(b, x.pos)
			copy(b[4:], x.hash[:])
		})
	}
	if err == nil {
		err = appendRecords(filepath.Join(st.dir, "acted.bin"), uint64(st.acted), actedSize, len(l.acted)-st.acted, func(i int, b []byte) {
			x := &l.acted[st.acted+i]
			binary.LittleEndian.PutUint32(b, x.pos)
			binary.LittleEndian.PutUint32(b[4:], x.dpos)
		})
	}
	if err != nil {
		return fmt.Errorf("saving audit state: %w", err)
	}
	sf := stateFile{Version: stateVersion, Checkpoint: string(cp), Size: size, Range: st.rng.Hashes(), Calls: len(l.calls), Execs: len(l.execs), FactsFrom: l.factsFrom, Pending: len(l.pending), Acted: len(l.acted)}
	for _, is := range l.issuers {
		sf.Issuers = append(sf.Issuers, issuerJSON{KID: is.kid, PublicKey: is.pub, Top: topOf(is.top), Legacy: is.legacy, HighWater: is.highWater, Checkpoint: is.checkpoint, HasCP: is.hasCP})
	}
	for _, s := range l.sessions[1:] {
		sf.Sessions = append(sf.Sessions, sessionJSON{Issuer: s.issuer, Name: s.name, Last: s.last, LastSeq: s.lastSeq, IssuedAt: s.issuedAt, HasLast: s.hasLast, Ended: s.ended, Top: topOf(s.top)})
	}
	for _, f := range l.bad.list {
		sf.Bad = append(sf.Bad, badJSON{f.Index, f.Message})
	}
	if m := l.bad.more[KindBadEntry]; m != nil {
		sf.BadMore = m.Count
	}
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(st.dir, "state.json"), b, 0o644); err != nil {
		return fmt.Errorf("saving audit state: %w", err)
	}
	st.size, st.cp, st.calls, st.execs, st.pending, st.acted = size, string(cp), len(l.calls), len(l.execs), len(l.pending), len(l.acted)
	st.relinked = false
	return nil
}

// appendRecords truncates the file to its first from records of size bytes
// and appends n more, filled in by put, then syncs it.
func appendRecords(path string, from uint64, size, n int, put func(i int, b []byte)) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(int64(from) * int64(size)); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	b := make([]byte, size)
	for i := range n {
		put(i, b)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Sync()
}
