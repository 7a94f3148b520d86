package posix

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// Index is a log's dedup index in SQLite: RFC 6962 leaf hash → log index,
// plus the number of log entries it covers (a contiguous prefix of the
// log). It implements log.Index. Rows and the covered count change in one
// transaction, so after a crash the index is always a correct prefix and
// catching up is idempotent. An in-memory Bloom filter over the hashes lets
// Lookup answer most new entries without SQLite; it is sound only because
// this process is the index's one writer (the directory lock).
//
// An Index is safe for concurrent use: lookups run on a pool of read
// connections (WAL), and writes are serialized by SQLite.
type Index struct {
	db     *sql.DB
	filter atomic.Pointer[filter]
}

// OpenIndex opens (or creates) the index at path and loads its filter.
func OpenIndex(ctx context.Context, path string) (*Index, error) {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening dedup index: %w", err)
	}
	db.SetMaxOpenConns(4)
	for _, s := range []string{
		`CREATE TABLE IF NOT EXISTS leaves (hash BLOB PRIMARY KEY, idx INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`,
		`INSERT OR IGNORE INTO meta (k, v) VALUES ('covered', 0)`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening dedup index: %w", err)
		}
	}
	x := &Index{db: db}
	if err := x.rebuildFilter(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return x, nil
}

// Close closes the database.
func (x *Index) Close() error { return x.db.Close() }

// Lookup returns the log index of the leaf with hash h, if the index holds it.
func (x *Index) Lookup(ctx context.Context, h [32]byte) (uint64, bool, error) {
	if f := x.filter.Load(); !f.mayContain(h) {
		return 0, false, nil
	}
	var i int64
	err := x.db.QueryRowContext(ctx, `SELECT idx FROM leaves WHERE hash = ?`, h[:]).Scan(&i)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("dedup lookup: %w", err)
	}
	return uint64(i), true, nil
}

// Covered returns how many log entries, from index 0, the index holds.
func (x *Index) Covered(ctx context.Context) (uint64, error) {
	var n int64
	if err := x.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'covered'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("dedup index: %w", err)
	}
	return uint64(n), nil
}

// Add records the leaf hashes of log entries from, from+1, … and sets the
// covered count to from+len(hashes), atomically. It fails if the index does
// not cover exactly from entries. It returns the indices of entries whose
// hash was already present.
func (x *Index) Add(ctx context.Context, from uint64, hashes [][32]byte) (dups []uint64, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'covered'`).Scan(&n); err != nil {
		return nil, err
	}
	if uint64(n) != from {
		return nil, fmt.Errorf("dedup index covers %d entries, not %d", n, from)
	}
	// Rows go in addRows at a time: one statement per row was 7% of
	// docket-log's CPU under load (issue 28), most of it per statement.
	var full *sql.Stmt
	args := make([]any, 0, 2*addRows)
	for start := 0; start < len(hashes); start += addRows {
		chunk := hashes[start:min(start+addRows, len(hashes))]
		st := full
		if st == nil || len(chunk) != addRows {
			if st, err = tx.PrepareContext(ctx, insertRows(len(chunk))); err != nil {
				return nil, err
			}
			defer st.Close()
			if len(chunk) == addRows {
				full = st
			}
		}
		args = args[:0]
		for i := range chunk {
			args = append(args, chunk[i][:], int64(from)+int64(start+i))
		}
		r, err := st.ExecContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		if k, _ := r.RowsAffected(); k == int64(len(chunk)) {
			continue
		}
		// A hash was already held (strict dedup should make that
		// impossible): find which, by its first index.
		for i := range chunk {
			var at int64
			if err := tx.QueryRowContext(ctx, `SELECT idx FROM leaves WHERE hash = ?`, chunk[i][:]).Scan(&at); err != nil {
				return nil, err
			}
			if at != int64(from)+int64(start+i) {
				dups = append(dups, from+uint64(start+i))
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET v = ? WHERE k = 'covered'`, int64(from)+int64(len(hashes))); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	f := x.filter.Load()
	for _, h := range hashes {
		f.add(h)
	}
	if f.full() {
		// A full filter is still sound, only less selective: if growing it
		// fails, the next Add tries again.
		_ = x.rebuildFilter(ctx)
	}
	return dups, nil
}

// addRows is how many rows one INSERT of Add writes.
const addRows = 64

// insertRows returns the INSERT of n rows of Add.
func insertRows(n int) string {
	return "INSERT OR IGNORE INTO leaves (hash, idx) VALUES (?, ?)" + strings.Repeat(", (?, ?)", n-1)
}

// Truncate drops every entry at or after size and sets the covered count
// to size: the log is shorter than the index (storage restored from an
// older copy). It fails if the index covers fewer than size entries.
func (x *Index) Truncate(ctx context.Context, size uint64) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'covered'`).Scan(&n); err != nil {
		return err
	}
	if size > uint64(n) {
		return fmt.Errorf("truncating the dedup index to %d entries: it covers only %d", size, n)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM leaves WHERE idx >= ?`, int64(size)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET v = ? WHERE k = 'covered'`, int64(size)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return x.rebuildFilter(ctx)
}
