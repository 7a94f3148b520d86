package store

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/transparency-dev/formats/proof"

	"github.com/docketlog/docket/internal/durable"
)

// Proofs are kept in one append-only journal per session,
// sessions/<name>.proofs, so that the number of files under .docket grows
// with the sessions, never with the receipts. Each line is JSON, one of:
//
//	{"id":"<32 hex>","checkpoint":"<signed checkpoint note>"}
//	{"sequence":<n>,"index":<i>,"cp":"<32 hex>","hashes":["<base64>",…]}
//
// A proof line holds the tlog-proof@v1 of the session's receipt n without
// its checkpoint, which it names by id (the first 16 bytes of its SHA-256,
// in hex); the checkpoint line comes first, once per PutProofs for all the
// proofs under it, and not again when the journal's last proof already
// names it. A proof line may carry "extra" (the tlog-proof's extra data,
// base64). An incomplete last line (a write cut short) is ignored by
// readers and cut off by the next writer; a line that does not parse counts
// as no proof, and its receipt is submitted again (the log deduplicates).
//
// Earlier versions wrote one file per receipt, proofs/<name>/<n>.tlog-proof
// (or <n>.proof): those are still read, and the first docket sync that
// reads the chains moves them into the journals (see Pending). An export
// bundle keeps that layout for third parties (writeProofFiles).

// Proof files: c2sp.org/tlog-proof says proofs SHOULD be stored with the
// extension .tlog-proof; Docket wrote .proof before, and still reads it.
const (
	ProofExt       = ".tlog-proof"
	LegacyProofExt = ".proof"
)

// proofJournalExt is the extension of a session's proof journal.
const proofJournalExt = ".proofs"

// A Proof is the log's proof of one receipt of the store.
type Proof struct {
	// Session is the receipt's session id, or its SessionName.
	Session  string
	Sequence int64
	// Text is the c2sp.org/tlog-proof@v1, verified by the caller.
	Text []byte
}

// proofJournalPath returns the path of a session's proof journal.
func (s *Store) proofJournalPath(session string) string {
	return filepath.Join(s.dir, SessionsDir, SessionName(session)+proofJournalExt)
}

// legacyProofDir returns the directory earlier versions kept a session's
// proof files in.
func (s *Store) legacyProofDir(session string) string {
	return filepath.Join(s.dir, ProofsDir, SessionName(session))
}

type checkpointLine struct {
	ID         string `json:"id"`
	Checkpoint string `json:"checkpoint"`
}

type proofLine struct {
	Sequence int64    `json:"sequence"`
	Index    uint64   `json:"index"`
	CP       string   `json:"cp"`
	Hashes   [][]byte `json:"hashes"`
	Extra    []byte   `json:"extra,omitempty"`
}

// journalLine is either kind of line, as read.
type journalLine struct {
	ID         string   `json:"id"`
	Checkpoint *string  `json:"checkpoint"`
	Sequence   int64    `json:"sequence"`
	Index      *uint64  `json:"index"`
	CP         string   `json:"cp"`
	Hashes     [][]byte `json:"hashes"`
	Extra      []byte   `json:"extra"`
}

// parseJournalLine parses one line of a proof journal: a checkpoint (cp
// set) or a proof (p set).
func parseJournalLine(line []byte) (cp *checkpointLine, p *proofLine, err error) {
	var l journalLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, nil, err
	}
	switch {
	case l.Checkpoint != nil && l.Index == nil:
		if !isCheckpointID(l.ID) || *l.Checkpoint == "" || checkpointID([]byte(*l.Checkpoint)) != l.ID {
			return nil, nil, errors.New("proof journal: bad checkpoint line")
		}
		return &checkpointLine{ID: l.ID, Checkpoint: *l.Checkpoint}, nil, nil
	case l.Index != nil && l.Checkpoint == nil:
		if l.Sequence < 1 || !isCheckpointID(l.CP) || len(l.Hashes) > 64 {
			return nil, nil, errors.New("proof journal: bad proof line")
		}
		for _, h := range l.Hashes {
			if len(h) != sha256.Size {
				return nil, nil, errors.New("proof journal: bad hash")
			}
		}
		return nil, &proofLine{Sequence: l.Sequence, Index: *l.Index, CP: l.CP, Hashes: l.Hashes, Extra: l.Extra}, nil
	}
	return nil, nil, errors.New("proof journal: unknown line")
}

// checkpointID names a checkpoint in a proof journal.
func checkpointID(checkpoint []byte) string {
	sum := sha256.Sum256(checkpoint)
	return hex.EncodeToString(sum[:16])
}

func isCheckpointID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// PutProofs stores proofs of receipts of the store, durably: each session's
// proofs are appended to its proof journal, under the journal's lock, and
// fsynced before PutProofs returns. A proof that does not parse as a
// tlog-proof@v1 with a checkpoint is refused, and nothing of its session is
// stored. Storing a receipt's proof again is harmless; readers take the
// last one.
func (s *Store) PutProofs(proofs []Proof) error {
	bySession := make(map[string][]Proof)
	for _, p := range proofs {
		name := SessionName(p.Session)
		bySession[name] = append(bySession[name], p)
	}
	for _, name := range slices.Sorted(maps.Keys(bySession)) {
		if err := s.putProofs(name, bySession[name]); err != nil {
			return fmt.Errorf("storing proofs of session %s: %w", name, err)
		}
	}
	return nil
}

func (s *Store) putProofs(name string, ps []Proof) error {
	parsed := make([]proof.TLogProof, len(ps))
	for i, p := range ps {
		if p.Sequence < 1 {
			return fmt.Errorf("receipt %d: bad sequence number", p.Sequence)
		}
		if err := parsed[i].Unmarshal(p.Text); err != nil || len(parsed[i].Checkpoint) == 0 {
			return fmt.Errorf("receipt %d: not a tlog-proof with a checkpoint (%v)", p.Sequence, err)
		}
	}
	f, err := openCreate(s.proofJournalPath(name))
	if err != nil {
		return err
	}
	defer f.Close() // releases the lock
	if err := durable.Lock(f); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size, last, err := repairTail(f, fi.Size())
	if err != nil {
		return err
	}
	known := make(map[string]bool)
	if last != nil {
		// The checkpoint the journal's last line is or names is in it.
		if cp, p, err := parseJournalLine(last); err == nil && cp != nil {
			known[cp.ID] = true
		} else if err == nil {
			known[p.CP] = true
		}
	}
	var buf bytes.Buffer
	for i, tp := range parsed {
		id := checkpointID(tp.Checkpoint)
		if !known[id] {
			known[id] = true
			b, _ := json.Marshal(checkpointLine{ID: id, Checkpoint: string(tp.Checkpoint)})
			buf.Write(append(b, '\n'))
		}
		pl := proofLine{Sequence: ps[i].Sequence, Index: tp.Index, CP: id, Extra: tp.ExtraData, Hashes: make([][]byte, len(tp.Hashes))}
		for j := range tp.Hashes {
			pl.Hashes[j] = tp.Hashes[j][:]
		}
		b, _ := json.Marshal(pl)
		buf.Write(append(b, '\n'))
	}
	if _, err := f.WriteAt(buf.Bytes(), size); err != nil {
		f.Truncate(size) // best effort: never leave half a line
		return err
	}
	if err := durable.Datasync(f); err != nil {
		return err
	}
	if size == 0 {
		return durable.SyncDir(filepath.Dir(f.Name()))
	}
	return nil
}

// repairTail cuts off an incomplete last line (a write cut short) of a
// file of the given size, and returns the new size and the last complete
// line, without its newline (nil if none).
func repairTail(f *os.File, size int64) (int64, []byte, error) {
	end, err := lastNewline(f, size)
	if err != nil {
		return 0, nil, err
	}
	if end != size {
		if err := f.Truncate(end); err != nil {
			return 0, nil, err
		}
	}
	if end == 0 {
		return 0, nil, nil
	}
	start, err := lastNewline(f, end-1)
	if err != nil {
		return 0, nil, err
	}
	line := make([]byte, end-1-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return 0, nil, err
	}
	return end, line, nil
}

// lastNewline returns the offset just after the last newline among the
// first size bytes of f, 0 if there is none.
func lastNewline(f *os.File, size int64) (int64, error) {
	for end := size; end > 0; {
		off := max(0, end-tailWindow)
		buf := make([]byte, end-off)
		if _, err := f.ReadAt(buf, off); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
		end = off
	}
	return 0, nil
}

// A ProofSet is the stored proofs of one session's receipts.
type ProofSet struct {
	checkpoints map[string][]byte
	journal     map[int64]*proofLine
	legacy      map[int64][]byte // proof files of earlier versions, raw
	// stale are the receipts whose proof files of earlier versions the
	// journal has too (a migration cut short): to remove.
	stale []int64
}

// Get returns the tlog-proof@v1 of the receipt with the given sequence
// number: from the journal, else the proof file an earlier version wrote
// (as it is, even if it does not parse: a verifier says so).
func (p *ProofSet) Get(sequence int64) ([]byte, bool) {
	if l := p.journal[sequence]; l != nil {
		if cp, ok := p.checkpoints[l.CP]; ok {
			tp := proof.TLogProof{Index: l.Index, Checkpoint: cp, ExtraData: l.Extra, Hashes: make([][sha256.Size]byte, len(l.Hashes))}
			for i, h := range l.Hashes {
				tp.Hashes[i] = [sha256.Size]byte(h)
			}
			return tp.Marshal(), true
		}
	}
	b, ok := p.legacy[sequence]
	return b, ok
}

// usable reports whether the set holds a proof of the receipt that can be
// read as a tlog-proof: one Sync need not ask the log for again.
func (p *ProofSet) usable(sequence int64) bool {
	if l := p.journal[sequence]; l != nil && p.checkpoints[l.CP] != nil {
		return true
	}
	b, ok := p.legacy[sequence]
	if !ok {
		return false
	}
	var tp proof.TLogProof
	return tp.Unmarshal(b) == nil && len(tp.Checkpoint) > 0
}

// Sequences returns the sequence numbers of the receipts the set has a
// proof of, in order.
func (p *ProofSet) Sequences() []int64 {
	var seqs []int64
	for n := range p.journal {
		if _, ok := p.Get(n); ok {
			seqs = append(seqs, n)
		}
	}
	for n := range p.legacy {
		if p.journal[n] == nil || p.checkpoints[p.journal[n].CP] == nil {
			seqs = append(seqs, n)
		}
	}
	slices.Sort(seqs)
	return slices.Compact(seqs)
}

// Len returns the number of receipts the set has a proof of.
func (p *ProofSet) Len() int { return len(p.Sequences()) }

// ReadProof returns the stored proof of a session's receipt, or an error
// wrapping fs.ErrNotExist when there is none.
func (s *Store) ReadProof(session string, sequence int64) ([]byte, error) {
	set, err := s.Proofs(session)
	if err != nil {
		return nil, err
	}
	if b, ok := set.Get(sequence); ok {
		return b, nil
	}
	return nil, fmt.Errorf("proof of session %s receipt %d: %w", SessionName(session), sequence, fs.ErrNotExist)
}

// Proofs reads the stored proofs of a session's receipts: its proof
// journal, and the proof files an earlier version wrote.
func (s *Store) Proofs(session string) (*ProofSet, error) {
	name := SessionName(session)
	set := &ProofSet{checkpoints: make(map[string][]byte), journal: make(map[int64]*proofLine), legacy: make(map[int64][]byte)}
	if err := s.readProofJournal(name, set); err != nil {
		return nil, err
	}
	vanished, err := readLegacyProofs(s.legacyProofDir(name), set)
	if err != nil {
		return nil, err
	}
	if vanished {
		// A sync moved them into the journal meanwhile.
		if err := s.readProofJournal(name, set); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// readProofJournal adds the lines of a session's proof journal to set.
func (s *Store) readProofJournal(name string, set *ProofSet) error {
	data, err := os.ReadFile(s.proofJournalPath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading proofs: %w", err)
	}
	for line := range bytes.Lines(data) {
		if line[len(line)-1] != '\n' {
			break // a write cut short
		}
		cp, p, err := parseJournalLine(line[:len(line)-1])
		switch {
		case err != nil:
			continue // that receipt has no proof, and is submitted again
		case cp != nil:
			set.checkpoints[cp.ID] = []byte(cp.Checkpoint)
		default:
			set.journal[p.Sequence] = p
		}
	}
	return nil
}

// maxLegacyProof bounds the proof files of earlier versions read.
const maxLegacyProof = 2 << 20

// readLegacyProofs adds the proof files in dir (<n>.tlog-proof, else
// <n>.proof) that the journal does not have to set. It reports whether a
// listed file was gone when read.
func readLegacyProofs(dir string, set *ProofSet) (vanished bool, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading proofs: %w", err)
	}
	// .proof sorts before .tlog-proof, which is read last and so wins.
	rank := func(e os.DirEntry) int {
		if strings.HasSuffix(e.Name(), ProofExt) {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(ents, func(a, b os.DirEntry) int { return cmp.Compare(rank(a), rank(b)) })
	for _, e := range ents {
		n, ok := legacyProofSequence(e.Name())
		if !ok {
			continue
		}
		if set.journal[n] != nil {
			set.stale = append(set.stale, n)
			continue
		}
		b, err := readFileMax(filepath.Join(dir, e.Name()), maxLegacyProof)
		if errors.Is(err, fs.ErrNotExist) {
			vanished = true
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading proofs: %w", err)
		}
		set.legacy[n] = b
	}
	return vanished, nil
}

// legacyProofSequence returns the sequence number a proof file of an
// earlier version is named for.
func legacyProofSequence(file string) (int64, bool) {
	base, ok := strings.CutSuffix(file, ProofExt)
	if !ok {
		if base, ok = strings.CutSuffix(file, LegacyProofExt); !ok {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(base, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == base
}

func readFileMax(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, err
}

// migrateProofs moves the proof files an earlier version wrote for a
// session into its proof journal: those that parse are appended to the
// journal (fsynced), then every file whose receipt the journal now holds
// is removed (also those a migration cut short left), and the directory
// when it is empty. A file that does not
// parse is left where it is; its receipt is submitted again.
func (s *Store) migrateProofs(name string, set *ProofSet) error {
	if len(set.legacy) == 0 && len(set.stale) == 0 {
		return nil
	}
	var move []Proof
	for n, b := range set.legacy {
		if set.usable(n) && set.journal[n] == nil {
			move = append(move, Proof{Session: name, Sequence: n, Text: b})
		}
	}
	slices.SortFunc(move, func(a, b Proof) int { return cmp.Compare(a.Sequence, b.Sequence) })
	if err := s.PutProofs(move); err != nil {
		return err
	}
	dir := s.legacyProofDir(name)
	done := set.stale
	for _, p := range move {
		done = append(done, p.Sequence)
	}
	for _, n := range done {
		for _, ext := range []string{ProofExt, LegacyProofExt} {
			if err := os.Remove(filepath.Join(dir, strconv.FormatInt(n, 10)+ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if os.Remove(dir) == nil {
		os.Remove(filepath.Dir(dir)) // proofs/, once the last session's are moved
	}
	return nil
}

// writeProofFiles writes the proofs in set of a session's receipts as one
// file per receipt, <dir>/proofs/<name>/<sequence>.tlog-proof with mode
// perm: the layout of a docket export bundle, which third parties read
// (c2sp.org/tlog-proof's SHOULD) and OpenDir(dir).Proofs reads back. It
// returns how many it wrote.
func writeProofFiles(dir, session string, set *ProofSet, perm fs.FileMode) (int, error) {
	seqs := set.Sequences()
	if len(seqs) == 0 {
		return 0, nil
	}
	pdir := filepath.Join(dir, ProofsDir, SessionName(session))
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return 0, err
	}
	for i, n := range seqs {
		b, _ := set.Get(n)
		if err := os.WriteFile(filepath.Join(pdir, strconv.FormatInt(n, 10)+ProofExt), b, perm); err != nil {
			return i, err
		}
	}
	return len(seqs), nil
}

// ReadProofFile reads the proof of the receipt with the given sequence
// number from a directory of proof files, as writeProofFiles lays them
// out: <sequence>.tlog-proof, or the <sequence>.proof an earlier Docket
// wrote.
func ReadProofFile(dir, sequence string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, sequence+ProofExt))
	if errors.Is(err, fs.ErrNotExist) {
		if old, oerr := os.ReadFile(filepath.Join(dir, sequence+LegacyProofExt)); oerr == nil {
			return old, nil
		}
	}
	return data, err
}
