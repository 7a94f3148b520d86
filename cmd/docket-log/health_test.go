package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log/logtest"
	"github.com/docketlog/docket/log/mysql/mysqltest"
)

// health returns the status and error code (or "ok") of GET /health.
func health(t *testing.T, u string) (int, string) {
	t.Helper()
	r := get(t, u+"/health")
	var h struct{ Status, Error, Message string }
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("GET /health = %d %s, not JSON", r.status, r.body)
	}
	if r.status == 200 {
		return r.status, h.Status
	}
	if h.Message == "" || r.header.Get("Retry-After") == "" {
		t.Errorf("GET /health = %d %s, want a message and Retry-After", r.status, r.body)
	}
	return r.status, h.Error
}

// awaitHealth polls GET /health until it answers status (it rechecks
// storage at most every second), or fails the test after a minute.
func awaitHealth(t *testing.T, u string, status int) {
	t.Helper()
	// A guard against a hanging test, not an assertion about time.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		got, code := health(t, u)
		if got == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /health = %d %s, want %d", got, code, status)
		}
	}
}

// Final names of Tessera's files, and the names of its temporaries: a
// final name and random digits.
var (
	finalTile    = regexp.MustCompile(`^\d{3}$`)
	finalPartial = regexp.MustCompile(`^([1-9]|[1-9]\d|1\d\d|2[0-4]\d|25[0-5])$`)
	temporary    = regexp.MustCompile(`^(checkpoint|treeState|gcState|version)\d+$`)
)

// temporaries returns Tessera's temporary files in the storage dir: in the
// tile tree, every file not under a final name; elsewhere, those named
// after a checkpoint or state file.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	var tmp []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		final := finalTile
		if strings.HasSuffix(filepath.Dir(rel), ".p") {
			final = finalPartial
		}
		if strings.HasPrefix(rel, "tile/") && !final.MatchString(d.Name()) || temporary.MatchString(d.Name()) {
			tmp = append(tmp, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tmp
}

// TestHealthFullDisk runs the binary on a real file system that fills up
// (a small tmpfs, so root only): as soon as the disk is full, and while
// every write fails, /health answers 503 not_writable (a load balancer
// sends no more writes) and POST /add 503 with Retry-After, and the
// temporary files of Tessera's failed writes are removed at once; once
// space is freed, /health is ok again and the same entries get their
// proofs.
func TestHealthFullDisk(t *testing.T) {
	disk := logtest.SmallDisk(t, 16<<20)
	storage := filepath.Join(disk, "data")
	tl := newTestLog(t)
	p := tl.start(t, "-storage-dir", storage, "-republish", "1h")
	pv, err := c2sp.NewProofVerifier(tl.vkey, nil)
	if err != nil {
		t.Fatal(err)
	}
	is := newIssuer()
	for i := range 3 {
		if _, ok := postProved(t, func() string { return p.url }, is.entry(t, "before", int64(i+1)), pv); !ok {
			t.FailNow()
		}
	}
	if status, code := health(t, p.url); status != 200 {
		t.Fatalf("GET /health before the disk is full = %d %s, want 200", status, code)
	}

	filler := logtest.FillDisk(t, disk)
	// Before any entry fails: the probe finds the disk full.
	if status, code := health(t, p.url); status != 503 || code != "not_writable" {
		t.Errorf("GET /health at once on a full disk = %d %s, want 503 not_writable", status, code)
	}
	var pending [][]byte
	for i := range 5 {
		leaf := is.entry(t, "full", int64(i+1))
		pending = append(pending, leaf)
		r := mustPost(t, p.url, leaf)
		var e struct{ Error string }
		json.Unmarshal(r.body, &e)
		if r.status != 503 || e.Error != "not_writable" || r.header.Get("Retry-After") == "" {
			t.Errorf("POST /add on a full disk = %d %s, want 503 not_writable with Retry-After", r.status, r.body)
		}
	}
	if status, code := health(t, p.url); status != 503 || code != "not_writable" {
		t.Errorf("GET /health on a full disk = %d %s, want 503 not_writable", status, code)
	}
	if tmp := temporaries(t, storage); len(tmp) > 0 {
		t.Errorf("Tessera's temporary files after the failed writes: %q, want none", tmp)
	}
	// Reads are still served.
	if r := get(t, p.url+"/checkpoint"); r.status != 200 {
		t.Errorf("GET /checkpoint on a full disk = %d, want 200", r.status)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, p.url, 200)
	for _, leaf := range pending {
		r := mustPost(t, p.url, leaf)
		if r.status != 200 {
			t.Fatalf("POST /add after the disk was freed = %d %s, want 200", r.status, r.body)
		}
		if _, err := pv.Verify(leaf, r.body); err != nil {
			t.Errorf("Verify(proof after the disk was freed) = %v", err)
		}
	}
	if status, code := health(t, p.url); status != 200 {
		t.Errorf("GET /health after the writes succeed again = %d %s, want 200", status, code)
	}
}

// TestHealthCheckpointMissing: when the published checkpoint file is gone
// from the storage (and Tessera will not publish again for an hour),
// /health answers 503 checkpoint_unreadable, as /checkpoint answers 404,
// instead of vouching for the copy the log holds in memory; the next
// publication makes it ok again.
func TestHealthCheckpointMissing(t *testing.T) {
	tl := newTestLog(t)
	p := tl.start(t, "-checkpoint-interval", "1h", "-republish", "1h")
	if status, code := health(t, p.url); status != 200 {
		t.Fatalf("GET /health = %d %s, want 200", status, code)
	}
	if err := os.Remove(filepath.Join(tl.dir, "data", "checkpoint")); err != nil {
		t.Fatal(err)
	}
	if status, code := health(t, p.url); status != 503 || code != "checkpoint_unreadable" {
		t.Errorf("GET /health with the checkpoint file gone = %d %s, want 503 checkpoint_unreadable", status, code)
	}
	if r := get(t, p.url+"/checkpoint"); r.status != 404 {
		t.Errorf("GET /checkpoint with the file gone = %d, want 404", r.status)
	}
	// An entry makes Tessera publish again, since no checkpoint exists.
	if r := mustPost(t, p.url, newIssuer().entry(t, "after", 1)); r.status != 200 {
		t.Fatalf("POST /add = %d %s, want 200", r.status, r.body)
	}
	if status, code := health(t, p.url); status != 200 {
		t.Errorf("GET /health after a new publication = %d %s, want 200", status, code)
	}
}

// TestMySQLHealth: on MySQL storage, /health answers 503
// checkpoint_unreadable while the published checkpoint's row is gone, and
// 503 not_writable while the database takes no write (a global read lock,
// as a backup takes); it is ok again once the lock is released.
func TestMySQLHealth(t *testing.T) {
	dsn := mysqltest.Database(t)
	tl := newTestLog(t)
	p := tl.startMySQL(t, "w", tl.addr, dsn, "-checkpoint-interval", "1h", "-republish", "1h")
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if status, code := health(t, p.url); status != 200 {
		t.Fatalf("GET /health = %d %s, want 200", status, code)
	}
	saved := get(t, p.url+"/checkpoint").body
	if _, err := db.Exec("DELETE FROM Checkpoint"); err != nil {
		t.Fatal(err)
	}
	if status, code := health(t, p.url); status != 503 || code != "checkpoint_unreadable" {
		t.Errorf("GET /health with the checkpoint row gone = %d %s, want 503 checkpoint_unreadable", status, code)
	}
	if _, err := db.Exec("INSERT INTO Checkpoint (id, note, published_at) VALUES (0, ?, ?)", saved, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, p.url, 200)

	ctx := context.Background()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, p.url, 503)
	if status, code := health(t, p.url); status != 503 || code != "not_writable" {
		t.Errorf("GET /health under a global read lock = %d %s, want 503 not_writable", status, code)
	}
	if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	awaitHealth(t, p.url, 200)
}
