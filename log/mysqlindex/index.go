// Package mysqlindex is the strict dedup index of a Docket log whose
// writers coordinate in a MySQL-compatible database (MySQL, MariaDB,
// Aurora): leaf hash → first index, in tables beside the Tessera driver's,
// shared by every docket-log writing to the log. It implements log.Index
// and log.Claimer. The storages of package mysql (Tessera's MySQL driver)
// and package aws (Tessera's AWS driver) open it in their database.
package mysqlindex

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
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

// batchTimeout bounds the statements of one batch of claims.
const batchTimeout = 30 * time.Second

// settleTimeout bounds how long Release waits for the index to cover what
// the log has sequenced before it gives up and leaves the claim in place.
const settleTimeout = 15 * time.Second

// Index is a log's strict dedup index in MySQL, shared by every docket-log
// writing to the database. It implements log.Index and log.Claimer: the
// leaf hash is the table's primary key, Add and Truncate run in
// transactions that lock the covered count, and a writer claims a hash
// (a row in DocketClaims) before appending it, so that two processes
// never append the same entry.
//
// Claims are durable rows (InnoDB), made in batches: concurrent Claim
// calls of one writer share one multi-row INSERT, whose rows carry the
// batch's token (claimed_at, unique per writer), and one read of the
// index. A claim ends only in the transaction that indexes its entry
// (Add), or once the writer knows its entry was not appended: after a
// failed append, Release first waits until the index covers every entry
// the log had sequenced (a locking read of the sequencer's row, which
// waits for a sequencing transaction in flight), because a commit whose
// answer was lost may have appended it.
//
// A claim's owner is the server's id for a connection the Index holds open
// for its lifetime: when a writer dies, the server drops that connection,
// and others take its claims over once the index covers the whole tree
// (so that anything the dead writer appended is found, not appended again).
//
// A writer may also outlive its owning connection (the server killed it,
// or the network dropped it): then its claims look like a dead writer's
// while it may still append their entries. Where the log's sequencing
// checks a fence (package aws: a trigger on Tessera's sequencer row, with
// the writer's id in each of its connections' @docket_writer), a writer
// that takes such a claim over first fences the owner's writer, so that
// none of its sequencing commits from then on; the writer lifts the fence
// on itself only once it has a new owning connection and no entry claimed
// under the old one is still being appended.
type Index struct {
	db    *sql.DB
	conn  *sql.Conn     // held open: its id owns this writer's claims; only the batcher replaces it
	owner atomic.Uint64 // conn's id
	// sequenced is a query of one row and column: how many entries the
	// log has sequenced, committed or not (a locking read).
	sequenced string

	claims    chan *claimReq // to the batcher
	stop      chan struct{}  // closed by Close: the batcher returns
	done      chan struct{}  // closed when the batcher has returned
	closeOnce sync.Once
	closeErr  error

	atMu   sync.Mutex
	lastAt int64 // the last claimed_at this writer gave a claim

	// writer is this process's id in the fence tables (0: no fencing).
	writer uint64
	// mineMu guards mine and retired: with fencing, the hashes this writer
	// holds a claim on and may be appending, each with the owner it was
	// claimed under, and the owning connections it had before.
	mineMu  sync.Mutex
	mine    map[[32]byte]uint64
	retired []uint64
}

// claimReq is one hash handed to the batcher; the outcome is set before
// done is closed.
type claimReq struct {
	h     [32]byte
	done  chan struct{}
	out   claimOutcome
	idx   uint64 // with claimFound
	at    int64  // with claimMine: the claim's claimed_at
	owner uint64 // and its owner
	err   error
}

type claimOutcome int

const (
	claimHeld  claimOutcome = iota // another claim exists (another writer's, or a settled-later one of this writer)
	claimMine                      // this writer holds the claim, and the index lacks h
	claimFound                     // the index holds h, at idx
)

// Open opens the index in db, whose tables Schema has created.
// sequenced is a query that returns how many entries the log has
// sequenced, which must wait for (lock in share mode) the row a
// sequencing transaction updates: a claim of a dead writer is taken over
// only once the index covers every entry sequenced before it died.
//
// writer, if not 0, is this process's id in the fence tables, which the
// log's sequencing connections carry (see Index): the writer must then
// call Appended for each entry it handed to the log once the append
// returned.
func Open(ctx context.Context, db *sql.DB, sequenced string, writer uint64) (*Index, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	x := &Index{db: db, sequenced: sequenced, writer: writer, mine: make(map[[32]byte]uint64),
		claims: make(chan *claimReq), stop: make(chan struct{}), done: make(chan struct{})}
	if err := x.own(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("dedup index: %w", err)
	}
	go x.batcher()
	return x, nil
}

// own makes conn the connection whose id owns this writer's claims from
// now on.
func (x *Index) own(ctx context.Context, conn *sql.Conn) error {
	// The connection stays idle: keep the server from closing it (the
	// default wait_timeout is 8 hours), which would end this writer's
	// claims while it holds them.
	if _, err := conn.ExecContext(ctx, "SET SESSION wait_timeout = 31536000"); err != nil {
		return err
	}
	var owner uint64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&owner); err != nil {
		return err
	}
	// A claim's claimed_at is its batch's token: go on after any claim an
	// earlier writer with the same connection id left (a server restart
	// reuses ids), so that a batch reads back only its own rows.
	var last sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT MAX(`claimed_at`) FROM `DocketClaims` WHERE `owner` = ?", owner).Scan(&last); err != nil {
		return err
	}
	x.atMu.Lock()
	x.lastAt = max(x.lastAt, last.Int64)
	x.atMu.Unlock()
	if x.writer != 0 {
		if _, err := conn.ExecContext(ctx, "REPLACE INTO `DocketOwners` (`owner`, `writer`) VALUES (?, ?)", owner, x.writer); err != nil {
			return fmt.Errorf("recording the owner: %w", err)
		}
	}
	x.conn = conn
	x.owner.Store(owner)
	return nil
}

// reown replaces the owning connection if the server no longer has it (it
// restarted, or the connection was killed), and reports whether it did.
// The claims are inserted on that connection, so a claim is never made
// under the id of a connection the server has dropped: other writers would
// take it over as a dead writer's while this one appends it. Claims this
// writer made before keep the old id, and are settled like a dead writer's.
func (x *Index) reown(ctx context.Context) (bool, error) {
	if err := x.conn.PingContext(ctx); err == nil {
		return false, nil
	}
	x.conn.Close()
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	old := x.owner.Load()
	if err := x.own(ctx, conn); err != nil {
		conn.Close()
		return false, err
	}
	x.mineMu.Lock()
	x.retired = append(x.retired, old)
	x.mineMu.Unlock()
	return true, nil
}

// hold records that this writer holds the claim on h, made under owner,
// and may append its entry.
func (x *Index) hold(h [32]byte, owner uint64) {
	if x.writer == 0 {
		return
	}
	x.mineMu.Lock()
	x.mine[h] = owner
	x.mineMu.Unlock()
}

// Appended records that this writer's append of the entry with hash h
// returned (with its index or an error): it is no longer being appended.
// With fencing, the writer calls it for every entry it hands to the log.
func (x *Index) Appended(h [32]byte) {
	if x.writer == 0 {
		return
	}
	x.mineMu.Lock()
	delete(x.mine, h)
	x.mineMu.Unlock()
}

// unfence lifts the fences other writers put on this one for owning
// connections it no longer has, once none of the entries claimed under
// them is still being appended.
func (x *Index) unfence(ctx context.Context) error {
	if x.writer == 0 {
		return nil
	}
	x.mineMu.Lock()
	var drained []any
	for _, o := range x.retired {
		busy := false
		for _, owner := range x.mine {
			if owner == o {
				busy = true
				break
			}
		}
		if !busy {
			drained = append(drained, o)
		}
	}
	x.mineMu.Unlock()
	if len(drained) == 0 {
		return nil
	}
	_, err := x.db.ExecContext(ctx, "DELETE FROM `DocketFences` WHERE `writer` = ? AND `owner` IN ("+placeholders("?", len(drained))+")",
		append([]any{x.writer}, drained...)...)
	return err
}

// fence stops the writer whose owning connection was owner from
// sequencing anything until it lifts the fence (see Index).
func (x *Index) fence(ctx context.Context, owner uint64) error {
	if x.writer == 0 {
		return nil
	}
	_, err := x.db.ExecContext(ctx, "INSERT IGNORE INTO `DocketFences` (`writer`, `owner`) SELECT `writer`, `owner` FROM `DocketOwners` WHERE `owner` = ?", owner)
	if err != nil {
		return fmt.Errorf("fencing the writer of a lost claim: %w", err)
	}
	return nil
}

// Close stops claiming and releases the connection that owns this
// writer's claims; the claims it still holds are taken over by others.
// It ends them itself only when the index covers every entry the log has
// sequenced (then none of them can have been appended): a claim whose
// entry was sequenced but not yet indexed must outlive the writer.
func (x *Index) Close() error {
	x.closeOnce.Do(func() {
		close(x.stop)
		<-x.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if settled, serr := x.covers(ctx); serr != nil {
			err = serr
		} else if settled {
			_, err = x.db.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `owner` = ?", x.owner.Load())
			if err == nil && x.writer != 0 {
				// Rows of this writer that others no longer need: it holds
				// no claim.
				_, err = x.db.ExecContext(ctx, "DELETE FROM `DocketFences` WHERE `writer` = ?", x.writer)
				if err == nil {
					_, err = x.db.ExecContext(ctx, "DELETE FROM `DocketOwners` WHERE `writer` = ?", x.writer)
				}
			}
		}
		x.closeErr = errors.Join(err, x.conn.Close())
	})
	return x.closeErr
}

// covers reports whether the index covers every entry the log has
// sequenced, committed or in flight (the locking read waits for a
// sequencing transaction).
func (x *Index) covers(ctx context.Context) (bool, error) {
	var target uint64
	if err := x.db.QueryRowContext(ctx, x.sequenced).Scan(&target); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("reading the sequenced size: %w", err)
	}
	covered, err := x.Covered(ctx)
	return covered >= target, err
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
// covered count to from+len(hashes) and deletes the claims on those hashes
// in one transaction. It fails if the index does not cover
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
	// The claims on these hashes end in the transaction that indexes
	// them: a writer that claims one of them next finds it by its read of
	// the index. The rows are deleted in key order, as claims insert them.
	for start := 0; start < len(hashes); start += rowsPerStatement {
		chunk := sortedHashes(hashes[start:min(len(hashes), start+rowsPerStatement)])
		if _, err := tx.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `hash` IN ("+placeholders("?", len(chunk))+")", hashArgs(chunk)...); err != nil {
			return nil, fmt.Errorf("ending claims: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
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
		r, err := x.claimBatched(ctx, h)
		if err != nil {
			return 0, false, fmt.Errorf("claiming an entry: %w", err)
		}
		switch r.out {
		case claimMine:
			x.hold(h, r.owner)
			return 0, false, nil
		case claimFound:
			return r.idx, true, nil
		}
		took, err := x.takeOver(ctx, h, &d)
		if err != nil {
			return 0, false, err
		}
		if took {
			// The previous holder may have indexed h just before it died.
			i, ok, err := x.Lookup(ctx, h)
			if err != nil || ok {
				return i, ok, errors.Join(err, x.end(context.WithoutCancel(ctx), h))
			}
			x.hold(h, x.owner.Load())
			return 0, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, ctx.Err()
		case <-time.After(claimPoll):
		}
	}
}

// claimBatched hands h to the batcher and returns its outcome. A request
// whose caller gives up still runs: a claim it won is then released.
func (x *Index) claimBatched(ctx context.Context, h [32]byte) (*claimReq, error) {
	r := &claimReq{h: h, done: make(chan struct{})}
	select {
	case x.claims <- r:
	case <-x.stop:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
		return r, r.err
	case <-ctx.Done():
		go func() {
			<-r.done
			if r.err == nil && r.out == claimMine {
				// Nothing was appended: the caller never saw the claim. Only
				// this batch's claim ends, not one a later Claim took over.
				x.db.Exec("DELETE FROM `DocketClaims` WHERE `hash` = ? AND `owner` = ? AND `claimed_at` = ?", h[:], r.owner, r.at)
			}
		}()
		return nil, ctx.Err()
	}
}

var errClosed = errors.New("dedup index closed")

// batcher claims the hashes handed to Claim, every hash waiting (up to
// rowsPerStatement) in one batch, one batch at a time.
func (x *Index) batcher() {
	defer close(x.done)
	batch := make([]*claimReq, 0, rowsPerStatement)
	for {
		batch = batch[:0]
		select {
		case r := <-x.claims:
			batch = append(batch, r)
		case <-x.stop:
			return
		}
	fill:
		for len(batch) < rowsPerStatement {
			select {
			case r := <-x.claims:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		err := x.claimBatch(ctx, batch)
		if err != nil {
			// The owning connection may be gone: then take a new one and
			// try once more. Rows the failed INSERT may have written keep
			// the dead id, and are settled as a dead writer's.
			if replaced, rerr := x.reown(ctx); rerr != nil {
				err = errors.Join(err, rerr)
			} else if replaced {
				err = x.claimBatch(ctx, batch)
				// If nothing claimed under the old connection is being
				// appended, a fence others put on it can go now (else
				// Release lifts it later).
				x.unfence(ctx)
			}
		}
		cancel()
		for _, r := range batch {
			if err != nil {
				r.err = err
			}
			close(r.done)
		}
	}
}

// nextAt returns a claimed_at for a new batch or take-over: the time in
// milliseconds, or one more than the last if that is not earlier, so that
// each is unique among this writer's claims.
func (x *Index) nextAt() int64 {
	x.atMu.Lock()
	defer x.atMu.Unlock()
	x.lastAt = max(time.Now().UnixMilli(), x.lastAt+1)
	return x.lastAt
}

// deadlocks is how many times a statement that InnoDB chose as the victim
// of a deadlock is tried again.
const deadlocks = 3

// claimBatch claims the hashes of batch in one statement, then reads
// which of them it won and which the index holds, and sets each request's
// outcome. The claim is inserted before the index is read: a claim row
// exists from before its entry is appended until the transaction that
// indexes it, so a batch that inserted the row for h either inserted it
// after that transaction (and its read finds h), or the entry was not
// appended and not being appended.
func (x *Index) claimBatch(ctx context.Context, batch []*claimReq) error {
	// In key order, as Add deletes claims, so that the two cannot deadlock
	// on each other's rows; each hash once.
	slices.SortFunc(batch, func(a, b *claimReq) int { return bytes.Compare(a.h[:], b.h[:]) })
	hashes := make([][32]byte, 0, len(batch))
	for i, r := range batch {
		if i == 0 || r.h != batch[i-1].h {
			hashes = append(hashes, r.h)
		}
	}
	at, owner := x.nextAt(), x.owner.Load()
	args := make([]any, 0, 3*len(hashes))
	for _, h := range hashes {
		args = append(args, h[:], owner, at)
	}
	q := "INSERT IGNORE INTO `DocketClaims` (`hash`, `owner`, `claimed_at`) VALUES " + placeholders("(?, ?, ?)", len(hashes))
	var res sql.Result
	var err error
	for try := 0; ; try++ {
		res, err = x.conn.ExecContext(ctx, q, args...)
		if !isDeadlock(err) || try == deadlocks {
			break
		}
	}
	if err != nil {
		return err
	}
	mine := make(map[[32]byte]bool, len(hashes))
	if k, _ := res.RowsAffected(); int(k) == len(hashes) {
		for _, h := range hashes {
			mine[h] = true
		}
	} else if k > 0 {
		won, err := x.hashes(ctx, "SELECT `hash`, 0 FROM `DocketClaims` WHERE `owner` = ? AND `claimed_at` = ? AND `hash` IN ("+placeholders("?", len(hashes))+")",
			append([]any{owner, at}, hashArgs(hashes)...)...)
		if err != nil {
			return err
		}
		for h := range won {
			mine[h] = true
		}
	}
	found, err := x.hashes(ctx, "SELECT `hash`, `idx` FROM `DocketLeaves` WHERE `hash` IN ("+placeholders("?", len(hashes))+")", hashArgs(hashes)...)
	if err != nil {
		return err
	}
	var stale [][32]byte // claims won on hashes the index holds
	for i, r := range batch {
		if idx, ok := found[r.h]; ok {
			r.out, r.idx = claimFound, idx
			if mine[r.h] {
				stale = append(stale, r.h)
				delete(mine, r.h)
			}
			continue
		}
		if mine[r.h] && (i == 0 || batch[i-1].h != r.h) {
			r.out, r.at, r.owner = claimMine, at, owner
		}
	}
	if len(stale) > 0 {
		if _, err := x.db.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `owner` = ? AND `claimed_at` = ? AND `hash` IN ("+placeholders("?", len(stale))+")",
			append([]any{owner, at}, hashArgs(stale)...)...); err != nil {
			return fmt.Errorf("ending claims: %w", err)
		}
	}
	return nil
}

// hashes runs a query of (hash, index) rows and returns them as a map.
func (x *Index) hashes(ctx context.Context, q string, args ...any) (map[[32]byte]uint64, error) {
	rows, err := x.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := make(map[[32]byte]uint64)
	for rows.Next() {
		var h []byte
		var i uint64
		if err := rows.Scan(&h, &i); err != nil {
			return nil, err
		}
		if len(h) != 32 {
			return nil, fmt.Errorf("a hash of %d bytes in the index", len(h))
		}
		m[[32]byte(h)] = i
	}
	return m, rows.Err()
}

// isDeadlock reports whether err is InnoDB's deadlock error, after which
// the statement was rolled back and may be tried again.
func isDeadlock(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && me.Number == 1213 // ER_LOCK_DEADLOCK
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
// the claim is older than ClaimTTL), or is this writer itself (an append
// whose outcome Release could not settle), and the index covers every
// entry sequenced by then, so that whatever the owner appended is found
// in the index, not appended again. d carries what an earlier call of the
// same Claim learned.
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
	if d.owner != owner || d.at != at {
		*d = dead{}
		expired := time.Since(time.UnixMilli(at)) >= ClaimTTL
		self := owner == x.owner.Load()
		if !expired && !self {
			var alive int
			if err := x.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE `ID` = ?", owner).Scan(&alive); err != nil {
				return false, err
			}
			if alive > 0 {
				return false, nil
			}
			// The owner's writer may be alive and still append the entry:
			// from now on it cannot (where sequencing checks the fence). A
			// claim taken over for its age is not fenced: its owner's id
			// may be another writer's now.
			if err := x.fence(ctx, owner); err != nil {
				return false, err
			}
		}
		*d = dead{owner: owner, at: at, seen: time.Now()}
		if expired || self {
			// Whatever the owner committed is long committed, or this
			// writer's own append has returned.
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
		x.owner.Load(), x.nextAt(), h[:], owner, at)
	if err != nil {
		return false, err
	}
	k, _ := r.RowsAffected()
	return k == 1, nil
}

// Release gives up this writer's claim on h: its append failed. A failed
// append may still have been sequenced (the connection died after its
// COMMIT was sent: the error does not say whether it committed), so
// Release first waits until the index covers every entry the log had
// sequenced — the read of the sequenced size waits for a sequencing
// transaction still in flight — and ends the claim only then: an entry
// that was appended is in the index by then (and its claim ended with
// it), and one that was not can no longer be. If the index does not get
// there within a bound (or ctx ends), Release leaves the claim in place
// and says so; whoever claims h next, this writer or another, settles it
// the same way before appending (see takeOver).
func (x *Index) Release(ctx context.Context, h [32]byte) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	// The append returned: perhaps because a fence stopped it.
	x.Appended(h)
	if err := x.unfence(ctx); err != nil {
		return fmt.Errorf("lifting a fence: %w", err)
	}
	if err := x.settle(ctx); err != nil {
		return fmt.Errorf("the append of a claimed entry failed and its outcome is not known yet, so the claim stays: %w", err)
	}
	return x.end(ctx, h)
}

// settle returns once the index covers every entry the log had sequenced
// when it was called, committed or in flight.
func (x *Index) settle(ctx context.Context) error {
	var target uint64
	if err := x.db.QueryRowContext(ctx, x.sequenced).Scan(&target); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the sequenced size: %w", err)
	}
	for {
		covered, err := x.Covered(ctx)
		if err != nil {
			return err
		}
		if covered >= target {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the index covers %d of %d sequenced entries: %w", covered, target, ctx.Err())
		case <-time.After(claimPoll):
		}
	}
}

// end deletes this writer's claim on h.
func (x *Index) end(ctx context.Context, h [32]byte) error {
	_, err := x.db.ExecContext(ctx, "DELETE FROM `DocketClaims` WHERE `hash` = ? AND `owner` = ?", h[:], x.owner.Load())
	return err
}

func placeholders(one string, n int) string {
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// sortedHashes returns hs in key order (a copy).
func sortedHashes(hs [][32]byte) [][32]byte {
	c := slices.Clone(hs)
	slices.SortFunc(c, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return c
}

func hashArgs(hs [][32]byte) []any {
	args := make([]any, len(hs))
	for i := range hs {
		args[i] = hs[i][:]
	}
	return args
}
