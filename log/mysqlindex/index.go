// Package mysqlindex is the strict dedup index of a Docket log whose
// writers coordinate in a MySQL-compatible database (MySQL, MariaDB,
// Aurora): leaf hash → first index, in tables beside the Tessera driver's,
// shared by every docket-log writing to the log. It implements log.Index
// and log.Claimer. The storages of package mysql (Tessera's MySQL driver)
// and package aws (Tessera's AWS driver) open it in their database.
package mysqlindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// claimPoll is how often Claim looks again while another writer holds a
// claim on the same hash.
const claimPoll = 5 * time.Millisecond

// ClaimTTL is the age after which a claim is taken over even if its
// owner's connection still appears alive (the server restarted and reused
// connection ids): a writer normally holds a claim for one sequencing round.
const ClaimTTL = time.Minute

// deathGrace is how long a writer waits, after it found the owner of a
// claim gone, before it reads how many entries the log has sequenced: the
// dead writer's other connections may still have a commit in flight.
const deathGrace = time.Second

// Index is a log's strict dedup index in MySQL, shared by every docket-log
// writing to the database. It implements log.Index and log.Claimer: the
// leaf hash is the table's primary key, Add and Truncate run in
// transactions that lock the covered count, and a writer claims a hash
// (a row in DocketClaims) before appending it, so that two processes
// never append the same entry.
//
// A claim's owner is the server's id for a connection the Index holds open
// for its lifetime: when a writer dies, the server drops that connection,
// and others take its claims over once the index covers the whole tree
// (so that anything the dead writer appended is found, not appended again).
type Index struct {
	db    *sql.DB
	conn  *sql.Conn // held open: its id owns this writer's claims
	owner uint64
	// sequenced is a query of one row and column: how many entries the
	// log has sequenced, committed or not (a locking read).
	sequenced string
}

// Open opens the index in db, whose tables Schema has created.
// sequenced is a query that returns how many entries the log has
// sequenced, which must wait for (lock in share mode) the row a
// sequencing transaction updates: a claim of a dead writer is taken over
// only once the index covers every entry sequenced before it died.
func Open(ctx context.Context, db *sql.DB, sequenced string) (*Index, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	x := &Index{db: db, conn: conn, sequenced: sequenced}
	// The connection stays idle: keep the server from closing it (the
	// default wait_timeout is 8 hours), which would end this writer's
	// claims while it holds them.
	if _, err := conn.ExecContext(ctx, "SET SESSION wait_timeout = 31536000"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dedup index: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&x.owner); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dedup index: %w", err)
	}
	return x, nil
}

// Close releases the connection that owns this writer's claims; the
// claims it still holds are taken over by others.
func (x *Index) Close() error {
	_, err := x.db.Exec("DELETE FROM `DocketClaims` WHERE `owner` = ?", x.owner)
	return errors.Join(err, x.conn.Close())
}

// Lookup returns the log index of the leaf with hash h, if the index holds it.
func (x *Index) Lookup(ctx context.Context, h [32]byte) (uint64, bool, error) {
	var i uint64
	err := x.db.QueryRowContext(ctx, "SELECT `idx` FROM `DocketLeaves` WHERE `hash` = ?", h[:]).Scan(&i)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("dedup lookup: %w", err)
	}
	return i, true, nil
}

// Covered returns how many log entries, from index 0, the index holds.
func (x *Index) Covered(ctx context.Context) (uint64, error) {
	var n uint64
	if err := x.db.QueryRowContext(ctx, "SELECT `covered` FROM `DocketIndexState` WHERE `id` = 0").Scan(&n); err != nil {
		return 0, fmt.Errorf("dedup index: %w", err)
	}
	return n, nil
}

// lockCovered reads the covered count in tx and locks it until tx ends.
func lockCovered(ctx context.Context, tx *sql.Tx) (uint64, error) {
	var n uint64
	err := tx.QueryRowContext(ctx, "SELECT `covered` FROM `DocketIndexState` WHERE `id` = 0 FOR UPDATE").Scan(&n)
	return n, err
}

// rowsPerStatement bounds the rows of one multi-row statement.
const rowsPerStatement = 500

// Add records the leaf hashes of log entries from, from+1, …, sets the
// covered count to from+len(hashes) in one transaction, then deletes the
// claims on those hashes. It fails if the index does not cover
// exactly from entries. It returns the indices of entries whose hash was
// already present.
func (x *Index) Add(ctx context.Context, from uint64, hashes [][32]byte) (dups []uint64, err error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	n, err := lockCovered(ctx, tx)
	if err != nil {
		return nil, err
	}
	if n != from {
		return nil, fmt.Errorf("dedup index covers %d entries, not %d", n, from)
	}
	for start := 0; start < len(hashes); start += rowsPerStatement {
		chunk := hashes[start:min(len(hashes), start+rowsPerStatement)]
		args := make([]any, 0, 2*len(chunk))
		for i, h := range chunk {
			args = append(args, h[:], from+uint64(start+i))
		}
		q := "INSERT IGNORE INTO `DocketLeaves` (`hash`, `idx`) VALUES " + placeholders("(?, ?)", len(chunk))
		r, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		if k, _ := r.RowsAffected(); int(k) < len(chunk) {
			d, err := duplicates(ctx, tx, from+uint64(start), chunk)
			if err != nil {
				return nil, err
			}
			dups = append(dups, d...)
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE `DocketIndexState` SET `covered` = ? WHERE `id` = 0", from+uint64(len(hashes))); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	// Only now that the entries are found may their claims go (the claims
	// table is not transactional): a writer that claims one of them next
	// finds it by Lookup.
	for start := 0; start < len(hashes); start += rowsPerStatement {
		chunk := hashes[start:min(len(hashes), start+rowsPerStatement)]
		if _, err := x.db.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `hash` IN ("+placeholders("?", len(chunk))+")", hashArgs(chunk)...); err != nil {
			return dups, fmt.Errorf("ending claims: %w", err)
		}
	}
	return dups, nil
}

// duplicates returns the indices from+i of the hashes in chunk that the
// index holds at another index.
func duplicates(ctx context.Context, tx *sql.Tx, from uint64, chunk [][32]byte) ([]uint64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT `hash`, `idx` FROM `DocketLeaves` WHERE `hash` IN ("+placeholders("?", len(chunk))+")", hashArgs(chunk)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	first := make(map[[32]byte]uint64, len(chunk))
	for rows.Next() {
		var h []byte
		var i uint64
		if err := rows.Scan(&h, &i); err != nil {
			return nil, err
		}
		first[[32]byte(h)] = i
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var dups []uint64
	for i, h := range chunk {
		if first[h] != from+uint64(i) {
			dups = append(dups, from+uint64(i))
		}
	}
	return dups, nil
}

// Truncate drops every entry at or after size and sets the covered count
// to size. It fails if the index covers fewer than size entries.
func (x *Index) Truncate(ctx context.Context, size uint64) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	n, err := lockCovered(ctx, tx)
	if err != nil {
		return err
	}
	if size > n {
		return fmt.Errorf("truncating the dedup index to %d entries: it covers only %d", size, n)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM `DocketLeaves` WHERE `idx` >= ?", size); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE `DocketIndexState` SET `covered` = ? WHERE `id` = 0", size); err != nil {
		return err
	}
	return tx.Commit()
}

// Claim reserves h for this writer to append. It returns found and the
// entry's index if h is in the index, or found false once this writer
// holds the claim; while another live writer holds it, Claim waits (until
// ctx is done) for that writer to index the entry or let the claim go.
// The claim ends when Add indexes h, or by Release.
func (x *Index) Claim(ctx context.Context, h [32]byte) (index uint64, found bool, err error) {
	var d dead
	for {
		// One statement for the common case, a new entry: claim h unless
		// the index holds it. The index is read as committed (INSERT …
		// SELECT reads with locks), and a writer commits an entry to the
		// index before it deletes its claim: so a claim inserted here is
		// on an entry that the index does not hold.
		r, err := x.db.ExecContext(ctx, "INSERT IGNORE INTO `DocketClaims` (`hash`, `owner`, `claimed_at`) "+
			"SELECT ?, ?, ? FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM `DocketLeaves` WHERE `hash` = ?)",
			h[:], x.owner, time.Now().UnixMilli(), h[:])
		if err != nil {
			return 0, false, fmt.Errorf("claiming an entry: %w", err)
		}
		if k, _ := r.RowsAffected(); k == 1 {
			return 0, false, nil
		}
		if i, ok, err := x.Lookup(ctx, h); err != nil || ok {
			return i, ok, err
		}
		took, err := x.takeOver(ctx, h, &d)
		if err != nil {
			return 0, false, err
		}
		if took {
			// The previous holder may have indexed h just before it died.
			i, ok, err := x.Lookup(ctx, h)
			if err != nil || ok {
				return i, ok, errors.Join(err, x.Release(context.WithoutCancel(ctx), h))
			}
			return 0, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(claimPoll):
		}
	}
}

// dead is a claim whose owner Claim found gone, and what taking it over
// waits for.
type dead struct {
	owner uint64
	at    int64     // the claim's claimed_at
	seen  time.Time // when the owner was found gone
	// target is how many entries the log had sequenced once deathGrace
	// had passed (read is true once it is known).
	target uint64
	read   bool
}

// takeOver makes the claim on h this writer's if its owner is gone (or
// the claim is older than ClaimTTL) and the index covers every entry
// sequenced by then, so that whatever the owner appended before it died
// is found in the index, not appended again. d carries what an earlier
// call of the same Claim learned.
func (x *Index) takeOver(ctx context.Context, h [32]byte, d *dead) (bool, error) {
	var owner uint64
	var at int64
	err := x.db.QueryRowContext(ctx, "SELECT `owner`, `claimed_at` FROM `DocketClaims` WHERE `hash` = ?", h[:]).Scan(&owner, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // released: the next INSERT may get it
	}
	if err != nil {
		return false, err
	}
	if owner == x.owner {
		return true, nil
	}
	if d.owner != owner || d.at != at {
		*d = dead{}
		expired := time.Since(time.UnixMilli(at)) >= ClaimTTL
		if !expired {
			var alive int
			if err := x.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE `ID` = ?", owner).Scan(&alive); err != nil {
				return false, err
			}
			if alive > 0 {
				return false, nil
			}
		}
		*d = dead{owner: owner, at: at, seen: time.Now()}
		if expired {
			// Whatever the owner committed is long committed.
			d.seen = d.seen.Add(-deathGrace)
		}
	}
	if !d.read {
		if time.Since(d.seen) < deathGrace {
			return false, nil
		}
		// A locking read: it waits for a sequencing transaction in
		// progress, so the count includes what that commits.
		err := x.db.QueryRowContext(ctx, x.sequenced).Scan(&d.target)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("reading the sequenced size: %w", err)
		}
		d.read = true
	}
	covered, err := x.Covered(ctx)
	if err != nil {
		return false, err
	}
	if covered < d.target {
		return false, nil // a follower will index the rest soon
	}
	r, err := x.db.ExecContext(ctx, "UPDATE `DocketClaims` SET `owner` = ?, `claimed_at` = ? WHERE `hash` = ? AND `owner` = ? AND `claimed_at` = ?",
		x.owner, time.Now().UnixMilli(), h[:], owner, at)
	if err != nil {
		return false, err
	}
	k, _ := r.RowsAffected()
	return k == 1, nil
}

// Release gives up this writer's claim on h: its append failed.
func (x *Index) Release(ctx context.Context, h [32]byte) error {
	_, err := x.db.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `hash` = ? AND `owner` = ?", h[:], x.owner)
	return err
}

func placeholders(one string, n int) string {
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

func hashArgs(hs [][32]byte) []any {
	args := make([]any, len(hs))
	for i := range hs {
		args[i] = hs[i][:]
	}
	return args
}
