package mysqlindex_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"os"
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
		x, err := mysqlindex.Open(ctx, db, sequenced)
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
	inflight, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer inflight.Rollback()
	if _, err := inflight.Exec("UPDATE TestSeq SET next = 1 WHERE id = 0"); err != nil {
		t.Fatal(err)
	}

	type claim struct {
		index uint64
		found bool
		err   error
	}
	got := make(chan claim, 1)
	go func() {
		i, found, err := x.Claim(ctx, h)
		got <- claim{i, found, err}
	}()
	// The claimer reaches the sequencer row and waits for its lock.
	for {
		var waits int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE `INFO` LIKE '%TestSeq%LOCK IN SHARE MODE' AND `ID` <> CONNECTION_ID()").Scan(&waits); err != nil {
			t.Fatal(err)
		}
		if waits > 0 {
			break
		}

		select {
		case c := <-got:
			t.Fatalf("Claim(h of a dead writer, sequencing in flight) = %d, found %v, %v before the sequencing committed", c.index, c.found, c.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
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
