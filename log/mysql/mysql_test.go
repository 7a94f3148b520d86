package mysql_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/logtest"
	"github.com/docketlog/docket/log/mysql"
	"github.com/docketlog/docket/log/mysql/mysqltest"
)

func TestMain(m *testing.M) { os.Exit(mysqltest.Main(m)) }

var _ interface {
	log.Index
	log.Claimer
} = (*mysql.Index)(nil)

func open(t *testing.T, dsn string, opts mysql.Options) *mysql.Storage {
	t.Helper()
	s, err := mysql.Open(t.Context(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestIndex(t *testing.T) {
	logtest.TestIndex(t, func(t *testing.T) (log.Index, func() log.Index) {
		dsn := mysqltest.Database(t)
		s, err := mysql.Open(t.Context(), dsn, mysql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Index, func() log.Index {
			s.Close()
			s, err = mysql.Open(t.Context(), dsn, mysql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s.Index
		}
	})
}

func TestClaims(t *testing.T) {
	ctx := t.Context()
	dsn := mysqltest.Database(t)
	a := open(t, dsn, mysql.Options{}).Index
	bs, err := mysql.Open(ctx, dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	b := bs.Index
	h := sha256.Sum256([]byte("entry"))

	if _, found, err := a.Claim(ctx, h); err != nil || found {
		t.Fatalf("a.Claim(new) = found %v, %v; want the claim", found, err)
	}
	// While a holds the claim, b waits; once a indexes the entry, b finds it.
	got := make(chan error, 1)
	go func() {
		i, found, err := b.Claim(ctx, h)
		if err == nil && (!found || i != 0) {
			err = errors.New("b.Claim did not find the entry at 0")
		}
		got <- err
	}()
	if _, err := a.Add(ctx, 0, [][32]byte{h}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	// A released claim can be taken; a claim whose owner closed (died) is
	// taken over once the index covers the tree.
	h2 := sha256.Sum256([]byte("entry 2"))
	if _, found, err := a.Claim(ctx, h2); err != nil || found {
		t.Fatalf("a.Claim(h2) = found %v, %v", found, err)
	}
	if err := a.Release(ctx, h2); err != nil {
		t.Fatal(err)
	}
	if _, found, err := b.Claim(ctx, h2); err != nil || found {
		t.Fatalf("b.Claim(released h2) = found %v, %v; want the claim", found, err)
	}
	bs.Close() // b's connection goes away with its claim on h2 still in the table
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO DocketClaims (hash, owner, claimed_at) VALUES (?, 999999, 0) ON DUPLICATE KEY UPDATE owner = 999999", h2[:]); err != nil {
		t.Fatal(err)
	}
	if _, found, err := a.Claim(ctx, h2); err != nil || found {
		t.Fatalf("a.Claim(h2 held by a dead writer) = found %v, %v; want the claim", found, err)
	}
}

func TestSchema(t *testing.T) {
	dsn := mysqltest.Database(t)
	s := open(t, dsn, mysql.Options{})
	// Opening again finds the schema in place.
	open(t, dsn, mysql.Options{})
	var v int
	if err := s.DB.QueryRow("SELECT version FROM DocketSchema WHERE id = 0").Scan(&v); err != nil || v != mysql.SchemaVersion {
		t.Fatalf("recorded schema version = %d, %v; want %d", v, err, mysql.SchemaVersion)
	}
	if err := s.Probe(t.Context()); err != nil {
		t.Fatalf("Probe() = %v, want nil", err)
	}
	// A database made before DocketProbe gets it at the next start.
	if _, err := s.DB.Exec("DROP TABLE DocketProbe"); err != nil {
		t.Fatal(err)
	}
	if err := open(t, dsn, mysql.Options{}).Probe(t.Context()); err != nil {
		t.Fatalf("Probe() after a start on a database without DocketProbe = %v, want nil", err)
	}
	if _, err := s.DB.Exec("UPDATE DocketSchema SET version = ? WHERE id = 0", mysql.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := mysql.Open(t.Context(), dsn, mysql.Options{}); err == nil || !strings.Contains(err.Error(), "newer than this docket-log") {
		t.Fatalf("Open(newer schema) = %v, want a refusal", err)
	}
}

func TestStaleRestoreRefused(t *testing.T) {
	dsn := mysqltest.Database(t)
	dir := t.TempDir()
	open(t, dsn, mysql.Options{StateDir: dir})
	// This writer saw a checkpoint of 10 entries; the database holds none.
	if err := os.WriteFile(filepath.Join(dir, mysql.HighWaterFile), []byte("10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := mysql.Open(context.Background(), dsn, mysql.Options{StateDir: dir})
	if !errors.Is(err, mysql.ErrStaleTree) || !strings.Contains(err.Error(), "restored from an older copy") {
		t.Fatalf("Open(stale database) = %v, want ErrStaleTree", err)
	}
}
