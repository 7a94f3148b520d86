package explorer

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// The index is the explorer's SQLite database: one row per verified log
// entry (fixed-size members only: hashes, numbers, and the short strings a
// receipt names its tool, decision and policies with), running counts per
// issuer, per session (with the chain's verdict so far) and per hour, and
// the state that lets a restart read only what is new: the verified prefix
// of the log, its compact range, and the checkpoint it verified under.
//
// Every page reads a bounded number of rows whatever the log's size: lists
// page by keyset (idx below or above a cursor, never OFFSET), counts are
// kept running rather than counted, and each filter of the search has an
// index that yields its rows in log order (tool; partial indexes for the
// rare kinds and decisions, so that a search for what is not there reads
// nothing), or, for a time range, the spans table: the earliest and latest
// issued_at of each entry bundle, which bounds the entries a range can
// hold.
//
// One goroutine (the follower) writes, one transaction per verified
// chunk; pages read at the same time (WAL), and only below the verified
// size they were given, so a page never shows what is being written.
type index struct {
	db *sql.DB
	// wholeHash is set when opened with an earlier version's index of
	// whole receipt hashes, which migrate replaces.
	wholeHash bool
}

const schema = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS issuers (
	id INTEGER PRIMARY KEY, kid TEXT NOT NULL UNIQUE, n INTEGER NOT NULL DEFAULT 0,
	allow_n INTEGER NOT NULL DEFAULT 0, deny_n INTEGER NOT NULL DEFAULT 0, ask_n INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS issuers_n ON issuers (n DESC, kid);
CREATE TABLE IF NOT EXISTS sessions (
	id INTEGER PRIMARY KEY, issuer INTEGER NOT NULL, sid TEXT NOT NULL, n INTEGER NOT NULL DEFAULT 0,
	first INTEGER NOT NULL, last INTEGER NOT NULL, UNIQUE (issuer, sid));
CREATE TABLE IF NOT EXISTS entries (
	idx INTEGER PRIMARY KEY, leaf BLOB NOT NULL, hash BLOB, issuer INTEGER, session INTEGER,
	seq INTEGER, iseq INTEGER, kind TEXT NOT NULL, event TEXT, tool TEXT, decision TEXT, reason TEXT,
	policies TEXT, at INTEGER, issued TEXT, prev BLOB, dech BLOB, enforced INTEGER, hw INTEGER, final INTEGER, head BLOB, err TEXT);
CREATE INDEX IF NOT EXISTS sessions_sid ON sessions (sid);
CREATE INDEX IF NOT EXISTS entries_issuer ON entries (issuer, idx);
CREATE INDEX IF NOT EXISTS entries_session ON entries (session, seq, idx);
CREATE TABLE IF NOT EXISTS hourly (
	hour INTEGER NOT NULL, issuer INTEGER NOT NULL, outcome TEXT NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY (hour, issuer, outcome)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hourly_issuer ON hourly (issuer, hour);
CREATE TABLE IF NOT EXISTS kinds (kind TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entries_tool ON entries (tool, idx);
CREATE INDEX IF NOT EXISTS entries_unmediated ON entries (idx) WHERE kind = 'unmediated';
CREATE INDEX IF NOT EXISTS entries_bad ON entries (idx) WHERE kind = 'bad';
CREATE INDEX IF NOT EXISTS entries_deny ON entries (idx) WHERE kind = 'decision' AND decision = 'deny';
CREATE INDEX IF NOT EXISTS entries_ask ON entries (idx) WHERE kind = 'decision' AND decision IN ('require_approval', 'ask');
CREATE INDEX IF NOT EXISTS entries_not_enforced ON entries (idx) WHERE kind = 'decision' AND enforced = 0;
CREATE TABLE IF NOT EXISTS spans (bundle INTEGER PRIMARY KEY, lo INTEGER NOT NULL, hi INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS witnesses (name TEXT PRIMARY KEY, size INTEGER NOT NULL);
`

func openIndex(ctx context.Context, path string) (*index, error) {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "cache_size(-32000)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening the explorer index: %w", err)
	}
	db.SetMaxOpenConns(8)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the explorer index: %w", err)
	}
	// An index written before spans were kept gets them once, from its
	// rows; meta's "spans" says it has them.
	var spans bool
	err = db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM meta WHERE k = 'spans')`).Scan(&spans)
	if err == nil && !spans {
		_, err = db.ExecContext(ctx, `INSERT INTO spans (bundle, lo, hi) SELECT idx / 256, min(at), max(at) FROM entries WHERE at > 0 GROUP BY idx / 256
			ON CONFLICT (bundle) DO NOTHING;
			INSERT INTO meta (k, v) VALUES ('spans', '1')`)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the explorer index: %w", err)
	}
	x := &index{db: db}
	// The index of the receipt hashes' first 8 bytes: created at once in
	// an index without rows or that has it, else built by the follower
	// (migrate) while pages use the earlier index of whole hashes.
	err = db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'entries_hash')`).Scan(&x.wholeHash)
	if err == nil && !x.wholeHash {
		_, err = db.ExecContext(ctx, hashIndex)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating the explorer index: %w", err)
	}
	return x, nil
}

// hashIndex is the index of the receipt hashes' first 8 bytes (byHash).
const hashIndex = `CREATE INDEX IF NOT EXISTS entries_hash8 ON entries (substr(hash, 1, 8))`

// migrate replaces the index of whole receipt hashes of an index kept by
// an earlier version with the index of their first 8 bytes, built from
// the hashes it stores (a sort; no entry is read from the log or verified
// again), in one transaction. Pages answer meanwhile: byHash's condition
// reads either index.
func (x *index) migrate(ctx context.Context) error {
	if !x.wholeHash {
		return nil
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, hashIndex+`; DROP INDEX IF EXISTS entries_hash`); err != nil {
		return fmt.Errorf("migrating the index of receipt hashes: %w", err)
	}
	return tx.Commit()
}

// state is what the index has verified: the prefix [0, size) of the log,
// consistent with the signed checkpoint cp, and that prefix's compact range.
type state struct {
	size   uint64
	cp     []byte
	hashes [][]byte
}

func (x *index) state(ctx context.Context) (*state, error) {
	st := &state{}
	rows, err := x.db.QueryContext(ctx, `SELECT k, v FROM meta`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		switch k {
		case "size":
			_, err = fmt.Sscan(string(v), &st.size)
		case "checkpoint":
			st.cp = v
		case "range":
			if len(v)%32 != 0 {
				err = errors.New("the stored compact range is not a list of hashes")
			}
			for h := range slicesChunk(v, 32) {
				st.hashes = append(st.hashes, h)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("the explorer index's %s: %w", k, err)
		}
	}
	return st, rows.Err()
}

func slicesChunk(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) >= n {
			if !yield(bytes.Clone(b[:n])) {
				return
			}
			b = b[n:]
		}
	}
}

// A row is what the index keeps of one log entry.
type row struct {
	Index    uint64
	Leaf     []byte // the leaf hash
	Hash     []byte // the receipt's chain hash (32 bytes), nil for a bad entry
	Issuer   string
	Session  string
	Seq      int64
	ISeq     int64
	Kind     string // decision, execution, lifecycle, unmediated, bad
	Event    string // hook_event, or lifecycle_event for lifecycle receipts
	Tool     string
	Decision string
	Reason   string
	Policies string // policy_ids, comma-separated
	At       int64  // issued_at, Unix milliseconds; 0 when unreadable
	Issued   string
	Prev     []byte
	DecHash  []byte
	Enforced bool // false only for "enforced": false (observe mode)
	HW       int64
	Final    int64  // final_sequence of a session_end
	Head     []byte // head_hash of a session_end
	Err      string // why a bad entry is not a valid Docket entry
}

// Kinds of entries.
const (
	kindDecision   = "decision"
	kindExecution  = "execution"
	kindLifecycle  = "lifecycle"
	kindUnmediated = "unmediated"
	kindBad        = "bad"
)

// outcome is the chart's bucket of a decision.
func outcome(decision string) string {
	switch decision {
	case "allow", "deny":
		return decision
	case "require_approval", "ask":
		return "ask"
	}
	return "other"
}

// sessionState is a session's running counts. Its chain is checked when
// its page asks (verdict): receipts of a session may be logged in any
// order, as docket sync submits them concurrently.
type sessionState struct {
	id     int64
	issuer int64
	n      int64
	first  uint64
	last   uint64
}

type sessKey struct {
	issuer int64
	sid    string
}

type hourKey struct {
	hour    int64
	issuer  int64
	outcome string
}

type issuerCounts struct{ n, allow, deny, ask int64 }

// commit adds rows (the entries [from, st.size) in order) and records st
// as the verified state, in one transaction.
func (x *index) commit(ctx context.Context, rows []*row, st *state) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	w := &writer{ctx: ctx, tx: tx, issuers: map[string]int64{}, sessions: map[sessKey]*sessionState{},
		counts: map[int64]*issuerCounts{}, hours: map[hourKey]int64{}, kinds: map[string]int64{}, spans: map[uint64]*span{}}
	if w.findSession, err = tx.PrepareContext(ctx, `SELECT id, n, first, last FROM sessions WHERE issuer = ? AND sid = ?`); err != nil {
		return err
	}
	defer w.findSession.Close()
	if w.newSession, err = tx.PrepareContext(ctx, `INSERT INTO sessions (issuer, sid, first, last) VALUES (?, ?, ?, ?) RETURNING id`); err != nil {
		return err
	}
	defer w.newSession.Close()
	// Rows go in insertBatch at a time, one statement each: a statement's
	// fixed cost (binding, running, ending it, and database/sql's own) is
	// paid once per batch rather than per row.
	batch, err := tx.PrepareContext(ctx, insertEntries(insertBatch))
	if err != nil {
		return err
	}
	defer batch.Close()
	args := make([]any, 0, insertBatch*entryColumns)
	flushRows := func(final bool) error {
		if len(args) == 0 || (!final && len(args) < insertBatch*entryColumns) {
			return nil
		}
		var err error
		if len(args) == insertBatch*entryColumns {
			_, err = batch.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertEntries(len(args)/entryColumns), args...)
		}
		if err != nil {
			return fmt.Errorf("indexing entries %d to %d: %w", args[0], args[len(args)-entryColumns], err)
		}
		args = args[:0]
		return nil
	}
	for _, r := range rows {
		w.kinds[r.Kind]++
		if r.Kind == kindDecision && !r.Enforced {
			w.kinds[notEnforced]++
		}
		var issuer, session any
		if r.Kind != kindBad {
			iid, err := w.issuer(r.Issuer)
			if err != nil {
				return err
			}
			s, err := w.session(iid, r.Session, r.Index)
			if err != nil {
				return err
			}
			s.add(r)
			issuer, session = iid, s.id
			c := w.counts[iid]
			if c == nil {
				c = &issuerCounts{}
				w.counts[iid] = c
			}
			c.n++
			if r.Kind == kindDecision {
				o := outcome(r.Decision)
				switch o {
				case "allow":
					c.allow++
				case "deny":
					c.deny++
				case "ask":
					c.ask++
				}
				if r.At > 0 {
					w.hours[hourKey{r.At / 3_600_000, iid, o}]++
				}
			}
		}
		if r.At > 0 {
			w.span(r)
		}
		enforced := 1
		if !r.Enforced {
			enforced = 0
		}
		args = append(args, r.Index, r.Leaf, nullBytes(r.Hash), issuer, session, r.Seq, r.ISeq, r.Kind, r.Event, r.Tool,
			r.Decision, r.Reason, r.Policies, r.At, r.Issued, nullBytes(r.Prev), nullBytes(r.DecHash), enforced, r.HW, r.Final, nullBytes(r.Head), r.Err)
		if err := flushRows(false); err != nil {
			return err
		}
	}
	if err := flushRows(true); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	var rng []byte
	for _, h := range st.hashes {
		rng = append(rng, h...)
	}
	for k, v := range map[string][]byte{"size": fmt.Append(nil, st.size), "checkpoint": st.cp, "range": rng} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, k, v); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// insertBatch is how many rows one INSERT adds; entryColumns is how many
// columns each has (insertBatch*entryColumns stays well below SQLite's
// 32,766 parameters).
const (
	insertBatch  = 64
	entryColumns = 22
)

// insertEntries is an INSERT of n rows into entries.
func insertEntries(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO entries (idx, leaf, hash, issuer, session, seq, iseq, kind, event, tool, decision, reason,
		policies, at, issued, prev, dech, enforced, hw, final, head, err) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?" + strings.Repeat(",?", entryColumns-1) + ")")
	}
	return b.String()
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// setCheckpoint records a newer checkpoint of the same tree (new
// cosignatures) or the one a verified prefix is consistent with.
func (x *index) setCheckpoint(ctx context.Context, cp []byte) error {
	_, err := x.db.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES ('checkpoint', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, cp)
	return err
}

// witnessed records that witness name cosigned a checkpoint of size.
func (x *index) witnessed(ctx context.Context, name string, size uint64) error {
	_, err := x.db.ExecContext(ctx, `INSERT INTO witnesses (name, size) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET size = max(size, excluded.size)`, name, size)
	return err
}

// A writer holds one commit's running state.
type writer struct {
	ctx      context.Context
	tx       *sql.Tx
	issuers  map[string]int64
	sessions map[sessKey]*sessionState
	counts   map[int64]*issuerCounts
	hours    map[hourKey]int64
	kinds    map[string]int64
	spans    map[uint64]*span
	// findSession and newSession look a session up and add one.
	findSession, newSession *sql.Stmt
}

// A span is the earliest and latest issued_at (Unix milliseconds) of the
// entries of one entry bundle.
type span struct{ lo, hi int64 }

func (w *writer) span(r *row) {
	b := r.Index / spanWidth
	if s := w.spans[b]; s != nil {
		s.lo, s.hi = min(s.lo, r.At), max(s.hi, r.At)
		return
	}
	w.spans[b] = &span{r.At, r.At}
}

// spanWidth is how many entries a span covers: an entry bundle's.
const spanWidth = 256

// notEnforced counts, in the kinds table, decisions not enforced.
const notEnforced = "decision-not-enforced"

// kindCounts returns how many entries of each kind the index holds.
func (x *index) kindCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT kind, n FROM kinds`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

func (w *writer) issuer(kid string) (int64, error) {
	if id, ok := w.issuers[kid]; ok {
		return id, nil
	}
	var id int64
	err := w.tx.QueryRowContext(w.ctx, `INSERT INTO issuers (kid) VALUES (?) ON CONFLICT (kid) DO UPDATE SET kid = kid RETURNING id`, kid).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("indexing issuer: %w", err)
	}
	w.issuers[kid] = id
	return id, nil
}

func (w *writer) session(issuer int64, sid string, idx uint64) (*sessionState, error) {
	key := sessKey{issuer, sid}
	if s, ok := w.sessions[key]; ok {
		return s, nil
	}
	s := &sessionState{issuer: issuer}
	err := w.findSession.QueryRowContext(w.ctx, issuer, sid).Scan(&s.id, &s.n, &s.first, &s.last)
	if errors.Is(err, sql.ErrNoRows) {
		s.first = idx
		err = w.newSession.QueryRowContext(w.ctx, issuer, sid, idx, idx).Scan(&s.id)
	}
	if err != nil {
		return nil, fmt.Errorf("indexing session: %w", err)
	}
	w.sessions[key] = s
	return s, nil
}

func (s *sessionState) add(r *row) {
	s.n++
	s.first, s.last = min(s.first, r.Index), max(s.last, r.Index)
}

func (w *writer) flush() error {
	// Each statement is prepared once for all the rows it writes: a
	// chunk touches hundreds of sessions and hours.
	upsert := func(query string, rows func(exec func(args ...any) error) error) error {
		st, err := w.tx.PrepareContext(w.ctx, query)
		if err != nil {
			return err
		}
		defer st.Close()
		return rows(func(args ...any) error {
			_, err := st.ExecContext(w.ctx, args...)
			return err
		})
	}
	return errors.Join(
		upsert(`UPDATE sessions SET n = ?, first = ?, last = ? WHERE id = ?`, func(exec func(...any) error) error {
			for _, s := range w.sessions {
				if err := exec(s.n, s.first, s.last, s.id); err != nil {
					return err
				}
			}
			return nil
		}),
		upsert(`UPDATE issuers SET n = n + ?, allow_n = allow_n + ?, deny_n = deny_n + ?, ask_n = ask_n + ? WHERE id = ?`, func(exec func(...any) error) error {
			for id, c := range w.counts {
				if err := exec(c.n, c.allow, c.deny, c.ask, id); err != nil {
					return err
				}
			}
			return nil
		}),
		upsert(`INSERT INTO kinds (kind, n) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET n = n + excluded.n`, func(exec func(...any) error) error {
			for k, n := range w.kinds {
				if err := exec(k, n); err != nil {
					return err
				}
			}
			return nil
		}),
		upsert(`INSERT INTO spans (bundle, lo, hi) VALUES (?, ?, ?)
			ON CONFLICT (bundle) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi)`, func(exec func(...any) error) error {
			for b, sp := range w.spans {
				if err := exec(b, sp.lo, sp.hi); err != nil {
					return err
				}
			}
			return nil
		}),
		upsert(`INSERT INTO hourly (hour, issuer, outcome, n) VALUES (?, ?, ?, ?)
			ON CONFLICT (hour, issuer, outcome) DO UPDATE SET n = n + excluded.n`, func(exec func(...any) error) error {
			for k, n := range w.hours {
				if err := exec(k.hour, k.issuer, k.outcome, n); err != nil {
					return err
				}
			}
			return nil
		}),
	)
}

// hashRef is "sha256:" + hex of a 32-byte hash, or "".
func hashRef(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return "sha256:" + hex.EncodeToString(b)
}

// parseRef reads "sha256:<64 hex>" (or the bare hex) as 32 bytes.
func parseRef(s string) ([]byte, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "sha256:")
	b, err := hex.DecodeString(s)
	return b, err == nil && len(b) == 32
}

// byHash is the condition on entries e that finds the receipts of chain
// hash h, and its arguments: through the index of the hashes' first 8
// bytes, then the whole hash.
//
// That index replaced one of the whole 32 bytes (an index kept by an
// earlier version is given it by migrate; until then the condition reads
// the earlier index, through its e.hash = ?): the hashes
// are in random order, so each entry committed goes to a random place
// of the index, and an index of a quarter of the size costs a third
// less to write at 6·10^5 entries (BenchmarkIndexCommit).
func byHash(h []byte) (string, []any) {
	return "substr(e.hash, 1, 8) = ? AND e.hash = ?", []any{h[:8:8], h}
}

// firstByHash selects the first entry below size whose receipt has chain
// hash h.
func (x *index) firstByHash(ctx context.Context, h []byte, size uint64) *sql.Row {
	c, args := byHash(h)
	return x.db.QueryRowContext(ctx, "SELECT e.idx FROM entries e WHERE "+c+" AND e.idx < ? ORDER BY e.idx LIMIT 1", append(args, size)...)
}
