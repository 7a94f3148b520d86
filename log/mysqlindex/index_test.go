package mysqlindex_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/logtest"
	"github.com/docketlog/docket/log/mysql/mysqltest"
	"github.com/docketlog/docket/log/mysqlindex"
)

func TestMain(m *testing.M) { os.Exit(mysqltest.Main(m)) }

var _ interface {
	log.Index
	log.Claimer
} = (*mysqlindex.Index)(nil)

// sequenced is the index's query of the sequenced size over the test's
// stand-in for a driver's sequencer row.
const sequenced = "SELECT `next` FROM `TestSeq` WHERE `id` = 0 LOCK IN SHARE MODE"

// open opens an index in a new database with the index's tables and a
// sequencer row at 0.
func open(t testing.TB) (*mysqlindex.Index, *sql.DB, func() *mysqlindex.Index) {
	t.Helper()
	ctx := t.Context()
	db, err := mysqlindex.Connect(ctx, mysqltest.Database(t), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	stmts := append(mysqlindex.Schema[:len(mysqlindex.Schema):len(mysqlindex.Schema)],
		"CREATE TABLE `TestSeq` (`id` TINYINT UNSIGNED NOT NULL, `next` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
		"INSERT INTO `TestSeq` VALUES (0, 0)")
	if err := mysqlindex.Migrate(ctx, db, 1, stmts); err != nil {
		t.Fatal(err)
	}
	reopen := func() *mysqlindex.Index {
		x, err := mysqlindex.Open(ctx, db, sequenced, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	return reopen(), db, reopen
}

func TestIndex(t *testing.T) {
	logtest.TestIndex(t, func(t *testing.T) (log.Index, func() log.Index) {
		x, _, reopen := open(t)
		return x, func() log.Index {
			x.Close()
			return reopen()
		}
	})
}

// TestTakeOverWaitsForSequencing: a writer died holding the claim on h
// while its transaction that sequences h was still in flight (the test
// holds it open). Another writer claiming h must not take the claim over
// on the strength of the size sequenced before that transaction: it waits
// for the transaction, then for the index to cover what it sequenced, and
// finds h there instead of appending it again.
func TestTakeOverWaitsForSequencing(t *testing.T) {
	ctx := t.Context()
	x, db, _ := open(t)
	h := sha256.Sum256([]byte("entry"))
	// The dead writer: a claim whose owner's connection does not exist.
	if _, err := db.Exec("INSERT INTO DocketClaims (hash, owner, claimed_at) VALUES (?, 999999, ?)", h[:], time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	// Its sequencing transaction, in flight: h is sequenced at index 0.
	inflight := sequencing(t, db)

	got := claimAsync(ctx, x, h)
	// The claimer reaches the sequencer row and waits for its lock.
	waitForLockWait(t, db, got)
	if err := inflight.Commit(); err != nil {
		t.Fatal(err)
	}
	// A follower indexes what the dead writer sequenced.
	if _, err := x.Add(ctx, 0, [][32]byte{h}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c.err != nil || !c.found || c.index != 0 {
		t.Fatalf("Claim(h, appended by a dead writer) = %d, found %v, %v; want 0, found", c.index, c.found, c.err)
	}
}

// TestReleaseAfterAmbiguousAppend: a writer's append of h failed, but
// the transaction that sequenced it may have committed (the test holds it
// open, as a server does while the COMMIT it received is in progress).
// Release must not end the claim before that transaction ends and the
// index covers what it sequenced: once it committed, h is found, and
// claiming h again (this writer or another) answers its index instead of
// appending it twice. If it rolled back, the claim ends and h can be
// claimed anew.
func TestReleaseAfterAmbiguousAppend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool
	}{{"committed", true}, {"rolled back", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			x, db, reopen := open(t)
			other := reopen()
			h := sha256.Sum256([]byte("entry"))
			if _, found, err := x.Claim(ctx, h); err != nil || found {
				t.Fatalf("Claim(new h) = found %v, %v; want the claim", found, err)
			}
			inflight := sequencing(t, db)
			released := make(chan claim, 1)
			go func() { released <- claim{err: x.Release(ctx, h)} }()
			waitForLockWait(t, db, released)
			if tc.committed {
				if err := inflight.Commit(); err != nil {
					t.Fatal(err)
				}
				// A follower indexes what was sequenced.
				if _, err := other.Add(ctx, 0, [][32]byte{h}); err != nil {
					t.Fatal(err)
				}
			} else if err := inflight.Rollback(); err != nil {
				t.Fatal(err)
			}
			if c := <-released; c.err != nil {
				t.Fatalf("Release = %v", c.err)
			}
			for _, w := range []*mysqlindex.Index{x, other} {
				i, found, err := w.Claim(ctx, h)
				if err != nil || found != tc.committed || found && i != 0 {
					t.Fatalf("Claim(h) after the release = %d, found %v, %v; want found %v", i, found, err, tc.committed)
				}
				if !found {
					if err := w.Release(ctx, h); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// sequencing returns a sequencing transaction in flight, which has
// sequenced one entry, at index 0, and holds the sequencer row's lock.
func sequencing(t *testing.T, db *sql.DB) *sql.Tx {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	if _, err := tx.Exec("UPDATE TestSeq SET next = 1 WHERE id = 0"); err != nil {
		t.Fatal(err)
	}
	return tx
}

// claim is what Claim returned.
type claim struct {
	index uint64
	found bool
	err   error
}

// claimAsync claims h in x in another goroutine.
func claimAsync(ctx context.Context, x *mysqlindex.Index, h [32]byte) <-chan claim {
	got := make(chan claim, 1)
	go func() {
		i, found, err := x.Claim(ctx, h)
		got <- claim{i, found, err}
	}()
	return got
}

// waitForLockWait returns once another connection waits for the lock of
// the sequencer row, and fails the test if done is ready before.
func waitForLockWait(t *testing.T, db *sql.DB, done <-chan claim) {
	t.Helper()
	for {
		var waits int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE `INFO` LIKE '%TestSeq%LOCK IN SHARE MODE' AND `ID` <> CONNECTION_ID()").Scan(&waits); err != nil {
			t.Fatal(err)
		}
		if waits > 0 {
			return
		}
		select {
		case c := <-done:
			t.Fatalf("returned (%d, found %v, %v) while a sequencing transaction was in flight", c.index, c.found, c.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestUnsettledClaim: a claim whose Release could not settle (the index
// did not cover the sequenced entries in time) stays, owned by its writer.
// Claiming its hash again, even by that writer, waits until the index
// covers what was sequenced, and then finds the entry there.
func TestUnsettledClaim(t *testing.T) {
	x, db, _ := open(t)
	h := sha256.Sum256([]byte("entry"))
	if _, found, err := x.Claim(t.Context(), h); err != nil || found {
		t.Fatalf("Claim(new h) = found %v, %v; want the claim", found, err)
	}
	// The append was sequenced at 0, but nothing indexes it yet.
	if _, err := db.Exec("UPDATE TestSeq SET next = 1 WHERE id = 0"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := x.Release(short, h); err == nil {
		t.Fatal("Release(h, index behind the sequencer) = nil, want an error")
	}
	var owners int
	if err := db.QueryRow("SELECT COUNT(*) FROM DocketClaims WHERE hash = ?", h[:]).Scan(&owners); err != nil || owners != 1 {
		t.Fatalf("claims on h after an unsettled Release = %d, %v; want 1", owners, err)
	}
	got := claimAsync(t.Context(), x, h)
	select {
	case c := <-got:
		t.Fatalf("Claim(h, its append unsettled) = %d, found %v, %v before the index covered it", c.index, c.found, c.err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := x.Add(t.Context(), 0, [][32]byte{h}); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c.err != nil || !c.found || c.index != 0 {
		t.Fatalf("Claim(h, appended) = %d, found %v, %v; want 0, found", c.index, c.found, c.err)
	}
}

// TestCloseKeepsUnsettledClaims: a writer that closes while the index
// lacks an entry the log sequenced keeps its claims (its entry may be that
// one); one whose index covers everything sequenced ends them.
func TestCloseKeepsUnsettledClaims(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sequenced bool // h was sequenced, and is not indexed yet
		want      int
	}{{"unsettled", true, 1}, {"settled", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			x, db, _ := open(t)
			h := sha256.Sum256([]byte("entry"))
			if _, found, err := x.Claim(t.Context(), h); err != nil || found {
				t.Fatalf("Claim(new h) = found %v, %v; want the claim", found, err)
			}
			if tc.sequenced {
				if _, err := db.Exec("UPDATE TestSeq SET next = 1 WHERE id = 0"); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM DocketClaims WHERE hash = ?", h[:]).Scan(&n); err != nil || n != tc.want {
				t.Fatalf("claims on h after Close = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}

// TestReownAfterKill: the server drops the connection whose id owns a
// writer's claims (a restart, KILL CONNECTION). The writer's next claims
// must be owned by a connection the server has, or other writers would
// take them over as a dead writer's while this one appends them.
func TestReownAfterKill(t *testing.T) {
	ctx := t.Context()
	x, db, _ := open(t)
	owner := func(h [32]byte) uint64 {
		t.Helper()
		if _, found, err := x.Claim(ctx, h); err != nil || found {
			t.Fatalf("Claim(new h) = found %v, %v; want the claim", found, err)
		}
		var o uint64
		if err := db.QueryRow("SELECT owner FROM DocketClaims WHERE hash = ?", h[:]).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	killed := owner(sha256.Sum256([]byte("before")))
	if _, err := db.Exec("KILL CONNECTION ?", killed); err != nil {
		t.Fatal(err)
	}
	now := owner(sha256.Sum256([]byte("after")))
	var alive int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", now).Scan(&alive); err != nil {
		t.Fatal(err)
	}
	if now == killed || alive != 1 {
		t.Errorf("owner of a claim after the owner's connection was killed = %d (killed %d, alive %d), want a live connection", now, killed, alive)
	}
}

// TestMigrateMovesClaimsToDisk: a database of schema version 1 kept the
// claims in memory, where a server restart loses them; migrating it makes
// the table InnoDB, and a new database gets one at once.
func TestMigrateMovesClaimsToDisk(t *testing.T) {
	for _, tc := range []struct {
		name string
		v1   bool
	}{{"version 1", true}, {"new", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			db, err := mysqlindex.Connect(ctx, mysqltest.Database(t), 4)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if tc.v1 {
				for _, q := range []string{
					"CREATE TABLE `DocketClaims` (`hash` BINARY(32) NOT NULL, `owner` BIGINT UNSIGNED NOT NULL, `claimed_at` BIGINT NOT NULL, PRIMARY KEY (`hash`)) ENGINE=MEMORY",
					"CREATE TABLE `DocketSchema` (`id` TINYINT UNSIGNED NOT NULL, `version` BIGINT UNSIGNED NOT NULL, PRIMARY KEY (`id`))",
					"INSERT INTO `DocketSchema` VALUES (0, 1)",
				} {
					if _, err := db.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := mysqlindex.Migrate(ctx, db, 2, mysqlindex.Schema); err != nil {
				t.Fatal(err)
			}
			var engine string
			if err := db.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'DocketClaims'").Scan(&engine); err != nil || engine != "InnoDB" {
				t.Errorf("DocketClaims' engine after Migrate = %q, %v; want InnoDB", engine, err)
			}
		})
	}
}

// TestClaimBatch: claims of one writer made at once share statements,
// and each gets its own outcome: new hashes are claimed, indexed ones are
// found at their index, and one another writer holds is waited for.
func TestClaimBatch(t *testing.T) {
	ctx := t.Context()
	x, _, reopen := open(t)
	other := reopen()
	hash := func(i int) [32]byte { return sha256.Sum256(binary.BigEndian.AppendUint64(nil, uint64(i))) }
	var indexed [][32]byte
	for i := range 10 {
		indexed = append(indexed, hash(i))
	}
	if _, err := x.Add(ctx, 0, indexed); err != nil {
		t.Fatal(err)
	}
	held := hash(1000)
	if _, found, err := other.Claim(ctx, held); err != nil || found {
		t.Fatalf("Claim(new h) = found %v, %v; want the claim", found, err)
	}
	heldDone := make(chan error, 1)
	go func() {
		_, found, err := x.Claim(ctx, held)
		if err == nil && !found {
			err = errors.New("claimed a hash another live writer holds")
		}
		heldDone <- err
	}()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			idx, found, err := x.Claim(ctx, hash(i))
			switch {
			case err != nil:
				t.Errorf("Claim(hash %d) = %v", i, err)
			case i < 10 && (!found || idx != uint64(i)):
				t.Errorf("Claim(indexed hash %d) = %d, found %v; want %d, found", i, idx, found, i)
			case i >= 10 && found:
				t.Errorf("Claim(new hash %d) = found at %d", i, idx)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-heldDone:
		t.Fatalf("Claim(a hash another writer holds) = %v while it holds it", err)
	case <-time.After(50 * time.Millisecond):
	}
	// The other writer appends it, at 10.
	if _, err := other.Add(ctx, 10, [][32]byte{held}); err != nil {
		t.Fatal(err)
	}
	if err := <-heldDone; err != nil {
		t.Fatal(err)
	}
}

// TestConnectInterpolates: the pool interpolates arguments into the
// statements, binary hashes with quotes, backslashes and NULs included.
func TestConnectInterpolates(t *testing.T) {
	x, _, _ := open(t)
	h := [32]byte{0, '\'', '\\', 0x1a, 0xff, '"'}
	if _, err := x.Add(t.Context(), 0, [][32]byte{h}); err != nil {
		t.Fatal(err)
	}
	if i, ok, err := x.Lookup(t.Context(), h); err != nil || !ok || i != 0 {
		t.Fatalf("Lookup(a hash with quotes and NULs) = %d, %v, %v; want 0, true", i, ok, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := mysqlindex.Connect(ctx, "root@tcp(127.0.0.1:1)/", 1); err == nil {
		t.Errorf("Connect(no database name) = nil, want an error")
	}
}

// BenchmarkClaim claims new hashes from 64 goroutines at once, as a
// writer under load does (a micro-benchmark of one function).
func BenchmarkClaim(b *testing.B) {
	x, _, _ := open(b)
	var n atomic.Uint64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, n.Add(1)))
			if _, _, err := x.Claim(context.Background(), h); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
