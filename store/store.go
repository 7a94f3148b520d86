// Package store implements the project side of Docket (DESIGN §5): the local
// store under <project>/.docket that holds the issuer key, the policy, the
// per-session receipt chains, the proofs returned by the log (one journal
// per session, proofs.go) and the spool of hook events that could not be
// receipted (spool.go), plus the client configuration (config.go) and the
// upload of receipts to the log through logclient (sync.go), which reads
// only what was appended since it last stopped (pending.go, appends.go).
//
// A Store offers operations — Key, Config, Append, Pending, PutProofs,
// Proofs, and the project setup of `docket init` (init.go: InitKey,
// InitConfig, WritePolicyFile, InitGitignore) — rather than paths for
// callers to open; its fields are unexported, and the only paths it hands
// out are the ones users name (ChainPath, KeyPath, PolicyDir, ConfigPath).
// It calls nothing above it: the hook drains the spool through the store
// (hook.DrainSpool), the store never calls into the hook.
//
// A session chain is a JSONL file with one receipt a line, in chain order, so
// that `docket verify` and any other verifier of the draft replay it
// directly. Appends are serialized by an exclusive flock on the chain file
// (agents run hooks in parallel) and fsynced before they are acknowledged.
// The head of each chain (last sequence and chain hash) is kept in a small
// state file, so an append costs the same however long the chain is; the
// head is recovered from the chain's last line when it is lost or stale.
package store

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// DirName is the name of the store directory inside a project.
const DirName = ".docket"

// Names inside the store directory.
const (
	ConfigFile  = "config.json"
	KeyFile     = "issuer.key"
	PolicyDir   = "policy"
	SessionsDir = "sessions"
	ProofsDir   = "proofs"
	SpoolDir    = "spool"
)

// ProjectDir returns the project root the hooks work in: $CLAUDE_PROJECT_DIR
// when it is set, else the current directory. The result is absolute and
// clean.
func ProjectDir() (string, error) {
	dir := os.Getenv("CLAUDE_PROJECT_DIR")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the project directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding the project directory: %w", err)
	}
	return abs, nil
}

// ErrNoProject: there is no Docket project where a command looked for one.
var ErrNoProject = errors.New("not in a docket project")

// FindProject returns the root of the project a command run here works
// on, found as git finds its repository: $CLAUDE_PROJECT_DIR when it is
// set (it must hold a .docket directory), else the working directory or
// the nearest directory above it that holds one. When there is none the
// error wraps ErrNoProject and names where it looked.
func FindProject() (string, error) {
	if dir := os.Getenv("CLAUDE_PROJECT_DIR"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("finding the project directory: %w", err)
		}
		if !isStoreDir(filepath.Join(abs, DirName)) {
			return "", fmt.Errorf("%w: $CLAUDE_PROJECT_DIR %s has no %s directory", ErrNoProject, abs, DirName)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the project directory: %w", err)
	}
	for dir := wd; ; {
		if isStoreDir(filepath.Join(dir, DirName)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no %s directory in %s or any directory above it", ErrNoProject, DirName, wd)
		}
		dir = parent
	}
}

// IsProject reports whether dir holds a .docket directory.
func IsProject(dir string) bool { return isStoreDir(filepath.Join(dir, DirName)) }

func isStoreDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Store is the .docket directory of one project. Opening a Store does no I/O;
// the directories are created as they are first written. Callers use its
// operations (Key, Config, Append, Pending, PutProofs, Proofs, Init,
// CopySession…), never paths inside it: the layout is the store's.
//
// A Store is safe for concurrent use by goroutines and by processes: chain
// appends take an exclusive lock on the chain file.
type Store struct {
	// project is the absolute project root.
	project string
	// dir is project/.docket.
	dir string

	heldMu sync.Mutex // guards held
	// held are the Appenders of the sessions held open (Hold,
	// HoldRecent), by SessionName.
	held map[string]*Appender
	// holdRecent is how many sessions HoldRecent holds; 0: none.
	holdRecent int
}

// Open returns the store of the project rooted at project.
func Open(project string) *Store {
	return &Store{project: project, dir: filepath.Join(project, DirName)}
}

// OpenDir returns the store whose directory is dir: a .docket directory, or
// a copy of one (a docket export bundle) read by a verifier. Its project
// is dir's parent.
func OpenDir(dir string) *Store {
	return &Store{project: filepath.Dir(dir), dir: dir}
}

// Project returns the project root the store belongs to: the directory
// agents run in and policies' in_project is relative to. It is not a
// place to build paths into the store from.
func (s *Store) Project() string { return s.project }

// ConfigPath returns the path of config.json, to name it to users and for
// tests that plant a configuration; read and write it with Config and
// WriteConfig.
func (s *Store) ConfigPath() string { return filepath.Join(s.dir, ConfigFile) }

// KeyPath returns the path of the issuer key (a receipts.KeyFile, mode
// 0600), to name it to users (docket verify -key-file) and for tests; load
// the key with Key, write it with WriteKey.
func (s *Store) KeyPath() string { return filepath.Join(s.dir, KeyFile) }

// Key loads the project's issuer key, refusing a key file that group or
// others can read (receipts.LoadPrivateKey).
func (s *Store) Key() (ed25519.PrivateKey, error) {
	return receipts.LoadPrivateKey(filepath.Join(s.dir, KeyFile))
}

// HasKey reports whether the project has an issuer key file, readable or
// not.
func (s *Store) HasKey() bool {
	_, err := os.Lstat(filepath.Join(s.dir, KeyFile))
	return err == nil
}

// WriteKey writes the project's issuer key file, mode 0600, creating the
// store directory if need be. It never replaces an existing key.
func (s *Store) WriteKey(kf receipts.KeyFile) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return receipts.WriteKeyFile(filepath.Join(s.dir, KeyFile), kf)
}

// PolicyDir returns the directory of the project's *.cedar files, which
// users edit and policy.LoadDir reads.
func (s *Store) PolicyDir() string { return filepath.Join(s.dir, PolicyDir) }

// spoolDir returns the directory where hook events that could not be
// receipted are kept.
func (s *Store) spoolDir() string { return filepath.Join(s.dir, SpoolDir) }

// ChainPath returns the path of a session's chain:
// sessions/<name>.jsonl, where name is SessionName(session). Chains are the
// files users hand to docket verify.
func (s *Store) ChainPath(session string) string {
	return filepath.Join(s.dir, SessionsDir, SessionName(session)+".jsonl")
}

// headPath returns the path of a session's head state file.
func (s *Store) headPath(session string) string {
	return filepath.Join(s.dir, SessionsDir, SessionName(session)+".head")
}

// SessionName returns the file name used for a session id. Ids made of
// letters, digits, '.', '_' and '-' (not starting with '.', at most 100
// bytes) are used as they are, which covers the UUIDs agents use. Any other
// id is reduced to those characters and suffixed with a hash of the whole
// id, so distinct ids keep distinct files. SessionName is idempotent:
// SessionName(SessionName(id)) == SessionName(id).
func SessionName(session string) string {
	if safeName(session) {
		return session
	}
	var b strings.Builder
	for _, r := range session {
		if b.Len() >= 64 {
			break
		}
		if isSafeRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(session))
	return strings.TrimLeft(b.String(), ".") + "-" + hex.EncodeToString(sum[:6])
}

func safeName(s string) bool {
	if s == "" || len(s) > 100 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !isSafeRune(r) {
			return false
		}
	}
	return true
}

func isSafeRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-'
}

// Sessions returns the names of the sessions that have a chain in the store,
// sorted. The names are SessionName forms; pass them back to Receipts,
// Proofs and Head as they are.
func (s *Store) Sessions() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, SessionsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var names []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Receipts returns the receipts of a session's chain in chain order, one
// element per line, exactly as stored (JCS bytes, without the newline). An
// incomplete last line (an append in progress) is left out. A session
// without a chain has no receipts and no error.
func (s *Store) Receipts(session string) ([][]byte, error) {
	data, err := os.ReadFile(s.ChainPath(session))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading chain: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1]
	}
	return receipts.SplitLines(data), nil
}

// Head is the end of a session chain: what the next receipt links to.
type Head struct {
	// Sequence is the sequence number of the last receipt, 0 for an empty chain.
	Sequence int64 `json:"sequence"`
	// Hash is the chain hash of the last receipt, "" for an empty chain.
	Hash string `json:"hash,omitempty"`
	// Size is the chain file's size in bytes after the last receipt; a head
	// whose size differs from the file's is stale.
	Size int64 `json:"size"`
}

// Pending is a decision (allow or require_approval, or a deny observe mode
// did not enforce) that an execution receipt links to.
type Pending struct {
	Hash     string // chain hash of the decision receipt
	Decision string // allow, require_approval, or deny when Unenforced
	ToolName string
	// Unenforced is set when the decision was signed with "enforced":
	// false (observe mode).
	Unenforced bool
	// IssuedAt is when the decision was signed, in Unix milliseconds.
	IssuedAt int64
}

// Link is what Append tells the function that builds the next receipt.
type Link struct {
	// Sequence is the sequence number the new receipt must carry.
	Sequence int64
	// Previous is the chain hash of the previous receipt ("" at genesis).
	Previous string
	// Decision is the decision found for AppendOptions.Executes, if any.
	Decision *Pending
	// IssuerSequence is the issuer_sequence the new receipt must carry: one
	// more than the last receipt of this store's issuer, in any session.
	IssuerSequence int64
}

// AppendOptions refine an Append.
type AppendOptions struct {
	// Executes, if set, names the call (its tool_use_id, or CallKey) whose
	// decision the new receipt executes. The latest PreToolUse allow or
	// require_approval receipt of that call that no execution links to yet
	// is looked up, from the end of the chain, and passed to the build
	// function in Link.Decision. The pre hook's hot path never pays for this.
	Executes string
	// Decision, if set, is the decision the new receipt executes, when the
	// caller holds it (as an MCP relay does): the lookup by Executes, which
	// reads the chain back, is then skipped.
	Decision *Pending
	// Journal, if set, is the local journal's entry for the new receipt
	// (JournalEntry): Append fills in its receipt hash, session and
	// sequence and writes it before the receipt, under the same lock.
	// Failing to write it fails the append: the project asked for it.
	Journal *JournalEntry
}

// ErrChainCorrupt is returned when the chain's last line is not a receipt
// the head can be recovered from.
var ErrChainCorrupt = errors.New("session chain is corrupt")

// Append adds one receipt to a session chain. Under the chain's exclusive
// lock it reads the head, calls build with the sequence number and link the
// new receipt must carry, writes the receipt build returns (JCS bytes, as
// receipts.Sign returns them) as one line, fsyncs it, and updates the head
// state. It returns the new head. Append creates the sessions directory and
// the chain as needed. While the session is held (Hold), the append goes
// through its Appender, with the same locks and the same fsync.
func (s *Store) Append(session string, opts AppendOptions, build func(Link) ([]byte, error)) (Head, error) {
	for a := s.holder(session); a != nil; a = s.holder(session) {
		head, err := a.append(session, opts, build)
		if !errors.Is(err, errClosed) {
			return head, err
		}
		// Closed between holder and append (HoldRecent closed it as
		// the least recent, or its holder closed it): nothing was
		// written; the session's current holder, or none, takes it.
	}
	// The issuer lock is taken first, then the chain's: every append takes
	// both in this order.
	ic, err := s.allocIssuerSequence(session)
	if err != nil {
		return Head{}, fmt.Errorf("appending receipt: %w", err)
	}
	defer ic.release()
	head, off, err := s.appendChain(session, opts, ic.next, build)
	if err != nil {
		return head, err
	}
	// Still under the issuer lock: the appends journal follows
	// issuer_sequence. A failure to write it costs the next sync a read of
	// the chains (Pending), not the receipt.
	_ = s.journalAppend(appendRecord{issuerSeq: ic.next, Ref: Ref{Session: SessionName(session), Sequence: head.Sequence, offset: off}})
	ic.done(session)
	return head, nil
}

// appendChain appends the receipt build returns to the session's chain and
// returns the new head and the offset of the receipt's line.
func (s *Store) appendChain(session string, opts AppendOptions, issuerSeq int64, build func(Link) ([]byte, error)) (Head, int64, error) {
	f, err := openCreate(s.ChainPath(session))
	if err != nil {
		return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
	}
	defer f.Close()
	if err := durable.Lock(f); err != nil {
		return Head{}, 0, fmt.Errorf("locking chain: %w", err)
	}
	// The lock is released when f is closed.

	fi, err := f.Stat()
	if err != nil {
		return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
	}
	// The head state file is only touched under the chain's lock.
	hf, err := openCreate(s.headPath(session))
	if err != nil {
		return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
	}
	defer hf.Close()
	ca := chainAppend{s: s, session: session, f: f, hf: hf, size: fi.Size(), journal: s.writeJournal}
	return ca.run(opts, issuerSeq, build)
}

// A chainAppend is one append to a session chain whose file f is locked:
// its head state file hf, the chain's size, and how the input journal's
// entry is written.
type chainAppend struct {
	s       *Store
	session string
	f, hf   *os.File
	size    int64
	journal func(JournalEntry) error
	// held, when set, is the Appender's cache of the head state file.
	held *headCache
}

// A headCache is what an Appender last wrote to its head state file: when
// the file still holds these bytes, the head is known without parsing it.
// Its buffers are reused from one append to the next.
type headCache struct {
	buf, written []byte
	head         Head
	line         []byte // the last receipt's line
}

// run reads the head, builds and writes the receipt, fsyncs it and updates
// the head state. It returns the new head and the offset of the receipt's
// line.
func (ca *chainAppend) run(opts AppendOptions, issuerSeq int64, build func(Link) ([]byte, error)) (Head, int64, error) {
	s, session, f := ca.s, ca.session, ca.f
	st, headLen, err := s.readHead(ca.hf, f, ca.size, ca.held)
	if err != nil {
		return Head{}, 0, err
	}
	link := Link{Sequence: st.Sequence + 1, Previous: st.Hash, IssuerSequence: issuerSeq}
	if opts.Decision != nil {
		link.Decision = opts.Decision
	} else if opts.Executes != "" {
		if link.Decision, err = findDecision(f, st.Size, opts.Executes, session); err != nil {
			return Head{}, 0, fmt.Errorf("finding the decision: %w", err)
		}
	}
	rec, err := build(link)
	if err != nil {
		return Head{}, 0, err
	}
	if bytes.IndexByte(rec, '\n') >= 0 {
		return Head{}, 0, errors.New("appending receipt: receipt contains a newline")
	}
	hash := receipts.ChainHash(rec)
	if e := opts.Journal; e != nil {
		e.ReceiptHash, e.SessionID, e.Sequence = hash, session, link.Sequence
		if err := ca.journal(*e); err != nil {
			return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
		}
	}
	var line []byte
	if ca.held != nil {
		line = ca.held.line[:0]
	}
	line = append(append(line, rec...), '\n')
	if ca.held != nil {
		ca.held.line = line
	}
	if _, err := f.WriteAt(line, st.Size); err != nil {
		f.Truncate(st.Size) // best effort: never leave half a receipt
		return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
	}
	if err := durable.Datasync(f); err != nil {
		return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
	}
	if st.Size == 0 {
		// A new chain: make its directory entries durable too.
		for _, dir := range []string{filepath.Join(s.dir, SessionsDir), s.dir} {
			if err := durable.SyncDir(dir); err != nil {
				return Head{}, 0, fmt.Errorf("appending receipt: %w", err)
			}
		}
	}
	st = Head{Sequence: link.Sequence, Hash: hash, Size: st.Size + int64(len(line))}
	// The head state is a cache: it is not fsynced, because a lost, torn or
	// stale head is detected (size mismatch, bad JSON) and recovered from
	// the chain. A failure to write it costs the next append a recovery.
	_ = writeHead(ca.hf, st, headLen, ca.held)
	return st, st.Size - int64(len(line)), nil
}

// openCreate opens a file of the store for reading and writing, creating it
// (and its directory) when needed.
func openCreate(path string) (*os.File, error) {
	f, err := openRW(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		f, err = openRW(path)
	}
	return f, err
}

// openRW opens or creates a regular file for reading and writing with
// open(2) alone: os.OpenFile would also try, and fail, to register it with
// the runtime's poller, a system call more for every file of every hook.
func openRW(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readSmall reads a small file from its start in one pread(2): at most
// len(buf) bytes, into buf.
func readSmall(f *os.File, buf []byte) ([]byte, error) {
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// Head returns the current head of a session chain without changing it.
func (s *Store) Head(session string) (Head, error) {
	f, err := os.Open(s.ChainPath(session))
	if errors.Is(err, fs.ErrNotExist) {
		return Head{}, nil
	}
	if err != nil {
		return Head{}, err
	}
	defer f.Close()
	if err := durable.RLock(f); err != nil {
		return Head{}, fmt.Errorf("locking chain: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return Head{}, err
	}
	return s.recoverHead(f, fi.Size(), false)
}

// readHead returns the head state of a chain whose file (locked, of the
// given size) is f: the state file hf when it matches the chain, else the
// head recovered from the chain's last line. It also returns how many bytes
// of hf it read. With a cache (an Appender's), a state file that holds
// what the cache last wrote is not parsed again.
func (s *Store) readHead(hf, f *os.File, size int64, cache *headCache) (Head, int, error) {
	var st Head
	var buf []byte
	if cache != nil {
		if cache.buf == nil {
			cache.buf = make([]byte, 4*headBlock)
		}
		buf = cache.buf
	} else {
		buf = make([]byte, 4*headBlock)
	}
	data, err := readSmall(hf, buf)
	if err == nil && cache != nil && cache.written != nil && bytes.Equal(data, cache.written) && cache.head.Size == size {
		return cache.head, len(data), nil
	}
	if err == nil && json.Unmarshal(data, &st) == nil && st.Size == size && (size == 0) == (st.Sequence == 0) {
		return st, len(data), nil
	}
	st, err = s.recoverHead(f, size, true)
	return st, len(data), err
}

// tailWindow is how much of a chain's end is read to find its last line.
const tailWindow = 64 << 10

// recoverHead rebuilds the head from the chain's last complete line. With
// repair set, an incomplete last line (an append that failed before it was
// acknowledged) is cut off.
func (s *Store) recoverHead(f *os.File, size int64, repair bool) (Head, error) {
	if size == 0 {
		return Head{}, nil
	}
	tail, off, err := readTail(f, size)
	if err != nil {
		return Head{}, fmt.Errorf("recovering chain head: %w", err)
	}
	end := bytes.LastIndexByte(tail, '\n') + 1
	if end == 0 {
		if off > 0 {
			return Head{}, fmt.Errorf("%w: last line longer than %d bytes", ErrChainCorrupt, tailWindow)
		}
		// Nothing but a partial first line.
	}
	if end < len(tail) && repair {
		// An append that failed before it was acknowledged: its bytes are
		// kept beside the chain (tornSuffix) before they are cut off, so
		// that nothing is lost silently; docket status reports them.
		if err := keepTorn(f.Name(), tail[end:]); err != nil {
			return Head{}, fmt.Errorf("recovering chain head: %w", err)
		}
		if err := f.Truncate(off + int64(end)); err != nil {
			return Head{}, fmt.Errorf("recovering chain head: %w", err)
		}
	}
	size = off + int64(end)
	tail = tail[:end]
	if len(bytes.TrimSpace(tail)) == 0 {
		if off > 0 {
			return Head{}, fmt.Errorf("%w: cannot find the last receipt", ErrChainCorrupt)
		}
		return Head{Size: size}, nil
	}
	lines := receipts.SplitLines(tail)
	last := lines[len(lines)-1]
	seq, err := sequenceOf(last)
	if err != nil {
		return Head{}, badTail(f.Name(), err)
	}
	h, err := receipts.Hash(last)
	if err != nil {
		return Head{}, fmt.Errorf("%w: %v", ErrChainCorrupt, err)
	}
	return Head{Sequence: seq, Hash: h, Size: size}, nil
}

// readTail reads up to tailWindow bytes from the end of a file of the given
// size and returns them with their offset.
func readTail(f *os.File, size int64) ([]byte, int64, error) {
	off := max(0, size-tailWindow)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, 0, err
	}
	return buf, off, nil
}

func sequenceOf(rec []byte) (int64, error) {
	r, err := receipts.Open(rec, nil)
	if err != nil || r.Payload.Sequence <= 0 {
		return 0, fmt.Errorf("%w: last receipt has no sequence number", ErrChainCorrupt)
	}
	return r.Payload.Sequence, nil
}

// findDecision looks, from the end of a chain (the first size bytes of f),
// for the latest PreToolUse allow or require_approval receipt of the call
// named key (its tool_use_id, or CallKey of session, tool and input hash)
// that no execution receipt links to yet. It reads the chain's tail first,
// and the whole chain only when the decision is not there. It returns nil
// when there is no such decision.
func findDecision(f *os.File, size int64, key, session string) (*Pending, error) {
	consumed := make(map[string]bool)
	for window := int64(tailWindow); ; window = size {
		off := max(0, size-window)
		data := make([]byte, size-off)
		if _, err := f.ReadAt(data, off); err != nil && err != io.EOF {
			return nil, err
		}
		if off > 0 {
			// Drop the partial first line of the window.
			data = data[bytes.IndexByte(data, '\n')+1:]
		}
		lines := receipts.SplitLines(data)
		for i := len(lines) - 1; i >= 0; i-- {
			if p := matchDecision(lines[i], key, session, consumed); p != nil {
				return p, nil
			}
		}
		if off == 0 {
			return nil, nil
		}
		clear(consumed) // the whole chain is read next, from its start
	}
}

// matchDecision returns the decision of one chain line if it is the
// unconsumed decision of the call named key; it records the decisions
// execution lines consume.
func matchDecision(line []byte, key, session string, consumed map[string]bool) *Pending {
	var r struct {
		Payload receipts.Payload `json:"payload"`
	}
	if json.Unmarshal(line, &r) != nil {
		return nil
	}
	p := r.Payload
	if p.DecisionReceiptHash != "" {
		consumed[p.DecisionReceiptHash] = true
		return nil
	}
	unenforced := p.Enforced != nil && !*p.Enforced
	if !(receipts.Step{HookEvent: p.HookEvent, Decision: p.Decision, Unenforced: unenforced}).Executable() {
		return nil
	}
	if !(p.ToolUseID != "" && p.ToolUseID == key) && CallKey(session, p.ToolName, p.ToolInputHash) != key {
		return nil
	}
	h, err := receipts.Hash(line)
	if err != nil || consumed[h] {
		return nil
	}
	at, _ := time.Parse(time.RFC3339Nano, p.IssuedAt)
	return &Pending{Hash: h, Decision: p.Decision, ToolName: p.ToolName, IssuedAt: at.UnixMilli(), Unenforced: unenforced}
}

// CallKey returns the key that links an execution to its decision when the
// agent sends no tool_use_id: a hash of the session, the tool name and the
// tool input hash.
func CallKey(session, toolName, toolInputHash string) string {
	sum := sha256.Sum256([]byte(session + "\x00" + toolName + "\x00" + toolInputHash))
	return "call:" + hex.EncodeToString(sum[:16])
}

// headBlock is the size of the head state file: its content is padded with
// spaces to it, so that it is always rewritten in place.
const headBlock = 256

// writeHead rewrites the head state file in place; prevLen is how long it
// was (at least), to cut it if it was longer. With a cache, it notes what
// it wrote there (nothing when the write failed).
func writeHead(hf *os.File, st Head, prevLen int, cache *headCache) error {
	var data []byte
	if cache != nil {
		data = cache.written[:0]
		cache.written = nil
	}
	data = appendHead(data, st)
	n := (len(data) + headBlock) / headBlock * headBlock
	for len(data) < n {
		data = append(data, ' ')
	}
	data[n-1] = '\n'
	if _, err := hf.WriteAt(data, 0); err != nil {
		return err
	}
	if prevLen > n {
		if err := hf.Truncate(int64(n)); err != nil {
			return err
		}
	}
	if cache != nil {
		cache.written, cache.head = data, st
	}
	return nil
}

// appendHead appends the JSON form of st, as json.Marshal writes it.
func appendHead(b []byte, st Head) []byte {
	b = append(b, `{"sequence":`...)
	b = strconv.AppendInt(b, st.Sequence, 10)
	if st.Hash != "" {
		b = append(b, `,"hash":`...)
		b = strictjson.AppendString(b, st.Hash)
	}
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, st.Size, 10)
	return append(b, '}')
}

// ChainOf returns the store and session of the chain file at path when it
// lies where ChainPath puts chains (<store>/sessions/<name>.jsonl, in a
// .docket directory or an export bundle): the store a verifier reads the
// chain's proofs from, with Proofs. ok is false for a file elsewhere.
func ChainOf(path string) (st *Store, session string, ok bool) {
	name, isChain := strings.CutSuffix(filepath.Base(path), ".jsonl")
	sessions := filepath.Dir(path)
	if !isChain || !safeName(name) || filepath.Base(sessions) != SessionsDir {
		return nil, "", false
	}
	return OpenDir(filepath.Dir(sessions)), name, true
}
