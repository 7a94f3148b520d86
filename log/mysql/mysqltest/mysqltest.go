// Package mysqltest runs a real MariaDB (or MySQL) server for tests: a
// mariadbd in a temporary data directory, listening only on a unix socket,
// started on first use and stopped by Main. Each test gets a database of
// its own.
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	_ "github.com/go-sql-driver/mysql"

	"github.com/docketlog/docket/internal/testproc"
)

// Skip is the message of a test skipped for want of a server.
const Skip = "mariadbd is not installed: .ci/deps/mysql.sh installs it (apt-get install mariadb-server)"

var (
	once    sync.Once
	srv     *server
	srvErr  error
	dbCount atomic.Int64
)

type server struct {
	dir    string
	socket string
	proc   *testproc.Proc
}

// Main runs the tests and then stops the server if a test started it.
// Use it as TestMain: func TestMain(m *testing.M) { os.Exit(mysqltest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	return code
}

// Available reports whether a server can be started here.
func Available() bool {
	_, err := exec.LookPath(binary("mariadbd", "mysqld"))
	return err == nil
}

// Database creates a new, empty database on the test server and returns
// the DSN (go-sql-driver form) of a user that owns it. The test is skipped
// if no server is installed, and fails if one cannot be started.
func Database(t testing.TB) string {
	t.Helper()
	if !Available() {
		t.Skip(Skip)
	}
	once.Do(func() { srv, srvErr = start() })
	if srvErr != nil {
		t.Fatalf("starting mariadbd: %v", srvErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbCount.Add(1))
	db, err := sql.Open("mysql", srv.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	return srv.dsn(name)
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("root@unix(%s)/%s", s.socket, db)
}

// binary returns the first of names found in PATH or /usr/sbin.
func binary(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		if p := filepath.Join("/usr/sbin", n); fileExists(p) {
			return p
		}
	}
	return names[0]
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func start() (*server, error) {
	// A short path: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "mariadb")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, socket: filepath.Join(dir, "sock")}
	data, tmp := filepath.Join(dir, "data"), filepath.Join(dir, "tmp")
	// A temporary directory of its own: servers installed at once in a
	// shared /tmp collide on the names of their temporary tables.
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	install := exec.Command(binary("mariadb-install-db", "mysql_install_db"), "--no-defaults",
		"--datadir="+data, "--user="+u.Username, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--tmpdir="+tmp)
	if out, err := install.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	cmd := exec.Command(binary("mariadbd", "mysqld"), "--no-defaults",
		"--datadir="+data, "--tmpdir="+tmp, "--socket="+s.socket, "--skip-networking", "--user="+u.Username,
		"--pid-file="+filepath.Join(dir, "pid"), "--log-error="+filepath.Join(dir, "error.log"),
		"--innodb-buffer-pool-size=256M", "--innodb-log-file-size=256M",
		"--innodb-flush-log-at-trx-commit=1", "--max-connections=500")
	if s.proc, err = testproc.Start(cmd, filepath.Join(dir, "mariadbd.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		s.stop()
		return nil, err
	}
	defer db.Close()
	if err := s.proc.Ready(func(ctx context.Context) bool { return db.PingContext(ctx) == nil }, filepath.Join(dir, "error.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *server) stop() {
	s.proc.Stop()
	os.RemoveAll(s.dir)
}
