package log

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/docketlog/docket/log/aws/s3test"
	"github.com/docketlog/docket/log/mysql/mysqltest"
)

func TestMain(m *testing.M) {
	code := mysqltest.Main(m)
	s3test.Stop()
	os.Exit(code)
}

func removeIfExists(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}

// loseIndex removes the dedup index of a test directory's storage (which
// must be closed), as an operator who lost it would. The AWS storage's
// index is in its database, as the MySQL storage's.
func loseIndex(t *testing.T, dir string) {
	t.Helper()
	if dsn, err := os.ReadFile(filepath.Join(dir, mysqlDSNFile)); err == nil {
		db, err := sql.Open("mysql", string(dsn))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, q := range []string{"DELETE FROM DocketLeaves", "UPDATE DocketIndexState SET covered = 0"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range []string{"dedup.sqlite", "dedup.sqlite-wal", "dedup.sqlite-shm"} {
		removeIfExists(t, filepath.Join(dir, "storage", ".docket-log", f))
	}
}
