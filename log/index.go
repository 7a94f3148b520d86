package log

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"
)

// index is the persistent dedup index: RFC 6962 leaf hash → log index, plus
// the number of log entries it covers (a contiguous prefix of the log).
// Rows and the covered count change in one transaction, so after a crash
// the index is always a correct prefix and catching up is idempotent.
//
// An index is safe for concurrent use: lookups run on a pool of read
// connections (WAL), and only the follower writes.
type index struct {
	db *sql.DB
}

// An entry hash is the RFC 6962 leaf hash of a stored leaf.
type leafHash = [32]byte

func openIndex(path string) (*index, error) {
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
		if _, err := db.Exec(s); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening dedup index %s: %w", path, err)
		}
	}
	return &index{db: db}, nil
}

func (x *index) close() error { return x.db.Close() }

// lookup returns the index of the leaf with hash h, if the index holds it.
func (x *index) lookup(ctx context.Context, h leafHash) (uint64, bool, error) {
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

// covered returns how many log entries, from index 0, the index holds.
func (x *index) covered(ctx context.Context) (uint64, error) {
	var n int64
	if err := x.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'covered'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("dedup index: %w", err)
	}
	return uint64(n), nil
}

// add records the leaf hashes of log entries from, from+1, … and sets the
// covered count to from+len(hashes), atomically. It fails if the index does
// not cover exactly from entries. It returns the indices of entries whose
// hash was already present (duplicates in the log, which strict dedup
// should make impossible).
func (x *index) add(ctx context.Context, from uint64, hashes []leafHash) (dups []uint64, err error) {
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
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO leaves (hash, idx) VALUES (?, ?)`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for i, h := range hashes {
		r, err := st.ExecContext(ctx, h[:], int64(from)+int64(i))
		if err != nil {
			return nil, err
		}
		if k, _ := r.RowsAffected(); k == 0 {
			dups = append(dups, from+uint64(i))
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET v = ? WHERE k = 'covered'`, int64(from)+int64(len(hashes))); err != nil {
		return nil, err
	}
	return dups, tx.Commit()
}

// truncate drops every entry at or after size: the log is shorter than the
// index (storage restored from an older copy).
func (x *index) truncate(ctx context.Context, size uint64) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM leaves WHERE idx >= ?`, int64(size)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET v = ? WHERE k = 'covered'`, int64(size)); err != nil {
		return err
	}
	return tx.Commit()
}
