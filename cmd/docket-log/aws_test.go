package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	f_log "github.com/transparency-dev/formats/log"

	"github.com/docketlog/docket/log/aws/s3test"
	"github.com/docketlog/docket/log/mysql/mysqltest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// awsLog is where a test's log is on -storage aws: a database, a bucket
// with the log under the prefix "log", readable by anyone at public.
type awsLog struct {
	dsn    string
	bucket s3test.Bucket
	public string
}

// newAWSLog makes a database and a bucket, and gives docket-log processes
// the server's credentials through the standard AWS environment variables.
func newAWSLog(t *testing.T) awsLog {
	t.Helper()
	b := s3test.NewBucket(t)
	a := awsLog{dsn: mysqltest.Database(t), bucket: b, public: b.MakePublic(t, "log")}
	for _, kv := range s3test.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return a
}

// startAWS starts a docket-log writer of tl's log on a, with local state
// in its own directory under tl.dir.
func (tl *testLog) startAWS(t *testing.T, name, addr string, a awsLog, args ...string) *proc {
	t.Helper()
	return start(t, logBin, addr, "/health", append([]string{"-listen", addr, "-key", tl.key, "-storage", "aws",
		"-mysql-dsn", a.dsn, "-s3-bucket", a.bucket.Name, "-s3-prefix", "log", "-s3-endpoint", a.bucket.Endpoint,
		"-storage-dir", filepath.Join(tl.dir, name)}, args...)...)
}

// TestAWSWriters runs two docket-log processes on one database and bucket
// under concurrent load in which every entry is submitted to both at once,
// and SIGKILLs one of them mid-load (see testWriters); the log is read as
// anyone reads it, from the bucket's public URL.
func TestAWSWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two writers and kills one under load")
	}
	a3 := newAWSLog(t)
	tl := newTestLog(t)
	a := tl.startAWS(t, "a", tl.addr, a3)
	b := tl.startAWS(t, "b", freeAddr(t), a3)
	testWriters(t, tl, a, b, a3.public)
}

// TestAWSAuditFromBucket syncs a project's receipts to a docket-log on
// -storage aws, then audits and monitors the log from the bucket's public
// URL; docket-log itself answers reads only with -serve-reads, and then
// serves what the bucket holds.
func TestAWSAuditFromBucket(t *testing.T) {
	a3 := newAWSLog(t)
	tl := newTestLog(t)
	w := tl.startAWS(t, "a", tl.addr, a3)
	if r := get(t, w.url+"/checkpoint"); r.status != 404 || !strings.Contains(string(r.body), "writes only") {
		t.Errorf("GET /checkpoint without -serve-reads = %d %s, want 404 naming the public URL", r.status, r.body)
	}

	project := t.TempDir()
	st := store.Open(project)
	if err := st.WriteConfig(store.Config{LogURL: w.url, LogKey: tl.vkey}); err != nil {
		t.Fatal(err)
	}
	priv, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(st.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		_, err := st.Append("s1", store.AppendOptions{}, func(l store.Link) ([]byte, error) {
			return receipts.Sign(priv, receipts.Payload{Type: "protectmcp:decision", SessionID: "s1",
				Sequence: l.Sequence, PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence,
				HookEvent: "PreToolUse", ToolName: "Read", Decision: "allow", Reason: "cedar_allow"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		out, err := exec.Command(docketBin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := run("sync", "-dir", project, "-timeout", "10s"); code != 0 {
		t.Fatalf("docket sync = %d %s", code, out)
	}
	if code, out := run("audit", "-log", a3.public, "-log-key", tl.vkey, "-key-file", st.KeyPath(), project); code != 0 || !strings.Contains(out, " 0 findings") {
		t.Errorf("docket audit over the bucket's URL = %d %s, want 0 findings", code, out)
	}
	if code, out := run("monitor", "-log", a3.public, "-log-key", tl.vkey, "-state", t.TempDir(), "-once"); code != 0 {
		t.Errorf("docket monitor -once over the bucket's URL = %d %s, want 0", code, out)
	}

	// With -serve-reads, docket-log serves the bucket's checkpoint.
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	w = tl.startAWS(t, "a", tl.addr, a3, "-serve-reads")
	served, bucket := get(t, w.url+"/checkpoint"), get(t, a3.public+"/checkpoint")
	if served.status != 200 || !bytes.Equal(served.body, bucket.body) {
		t.Errorf("GET /checkpoint with -serve-reads = %d %q, want the bucket's %q", served.status, served.body, bucket.body)
	}
	if code, out := run("audit", "-log", w.url, "-log-key", tl.vkey, "-key-file", st.KeyPath(), project); code != 0 || !strings.Contains(out, " 0 findings") {
		t.Errorf("docket audit over docket-log -serve-reads = %d %s, want 0 findings", code, out)
	}
}

// TestAWSStaleRestore restores the database of a log on -storage aws from
// a copy older than a checkpoint a witness cosigned: a docket-log with no
// local state learns it from the witness and refuses to start, naming it.
func TestAWSStaleRestore(t *testing.T) {
	a3 := newAWSLog(t)
	tl := newTestLog(t)
	p := tl.startAWS(t, "a", tl.addr, a3)
	is := newIssuer()
	for i := range 3 {
		if r := mustPost(t, p.url, is.entry(t, "restore", int64(i+1))); r.status != 200 {
			t.Fatalf("POST /add = %d %s", r.status, r.body)
		}
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	cp := get(t, a3.public+"/checkpoint").body
	// The "backup" is of an empty log.
	db, err := sql.Open("mysql", a3.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"UPDATE IntCoord SET seq = 0", "UPDATE SeqCoord SET next = 0", "DELETE FROM Seq",
		"DELETE FROM DocketLeaves", "UPDATE DocketIndexState SET covered = 0"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	policy := tl.cosignedBy(t, "w1", cp) // a witness that cosigned the log at size 3
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, logBin, "-listen", tl.addr, "-key", tl.key, "-storage", "aws",
		"-mysql-dsn", a3.dsn, "-s3-bucket", a3.bucket.Name, "-s3-prefix", "log", "-s3-endpoint", a3.bucket.Endpoint,
		"-storage-dir", filepath.Join(tl.dir, "new"), "-witness-policy", policy).CombinedOutput()
	want := "the database holds 0 entries, but witness w1 has cosigned a checkpoint of this log with 3"
	if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "point-in-time recovery") {
		t.Fatalf("docket-log on a restored database = %v\n%s\nwant a refusal (%q) that explains the recovery", err, out, want)
	}
}

// TestAWSFlags: the -storage aws flags are refused where they do not go.
func TestAWSFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no database", []string{"-storage", "aws", "-s3-bucket", "b"}, "-storage aws needs -mysql-dsn and -s3-bucket"},
		{"no bucket", []string{"-storage", "aws", "-mysql-dsn", "u@tcp(127.0.0.1:1)/db"}, "-storage aws needs -mysql-dsn and -s3-bucket"},
		{"bucket on posix", []string{"-s3-bucket", "b"}, "need -storage aws"},
		{"serve-reads on mysql", []string{"-storage", "mysql", "-mysql-dsn", "u@tcp(127.0.0.1:1)/db", "-serve-reads"}, "need -storage aws"},
		{"unknown storage", []string{"-storage", "gcp"}, "want posix, mysql or aws"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-listen", freeAddr(t), "-storage-dir", t.TempDir()}, tt.args...)
			out, err := exec.Command(logBin, args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "docket-log: error: ") || !strings.Contains(string(out), tt.want) {
				t.Fatalf("docket-log %s = %v\n%s\nwant an error saying %q", strings.Join(tt.args, " "), err, out, tt.want)
			}
		})
	}
}

// TestAWSMigrate moves a log from POSIX storage and from -storage mysql to
// -storage aws with docket-log migrate: it reports the source checkpoint's
// root, and a writer on the new storage answers every old entry with its
// old index as a duplicate.
func TestAWSMigrate(t *testing.T) {
	tests := []struct {
		name string
		// start starts a writer of the source log and returns the
		// migrate flags that name it.
		start func(t *testing.T, tl *testLog) (*proc, []string)
	}{
		{"posix", func(t *testing.T, tl *testLog) (*proc, []string) {
			return tl.start(t), []string{"-from", filepath.Join(tl.dir, "data")}
		}},
		{"mysql", func(t *testing.T, tl *testLog) (*proc, []string) {
			dsn := mysqltest.Database(t)
			return tl.startMySQL(t, "src", tl.addr, dsn), []string{"-from-mysql", dsn}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a3 := newAWSLog(t)
			tl := newTestLog(t)
			src, from := tt.start(t, tl)
			is := newIssuer()
			idx := map[string]string{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range 300 {
				leaf := is.entry(t, "old", int64(i+1))
				wg.Go(func() {
					r := mustPost(t, src.url, leaf)
					if r.status != 200 {
						t.Errorf("POST /add = %d %s", r.status, r.body)
					}
					mu.Lock()
					idx[string(leaf)] = r.header.Get("Docket-Index")
					mu.Unlock()
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			cp, _, _, err := f_log.ParseCheckpoint(get(t, src.url+"/checkpoint").body, tl.verifier.Name(), tl.verifier)
			if err != nil {
				t.Fatal(err)
			}
			if err := src.stop(); err != nil {
				t.Fatal(err)
			}

			args := append([]string{"migrate", "-key", tl.key, "-mysql-dsn", a3.dsn, "-s3-bucket", a3.bucket.Name,
				"-s3-prefix", "log", "-s3-endpoint", a3.bucket.Endpoint}, from...)
			out, err := exec.Command(logBin, args...).Output()
			want := fmt.Sprintf("moved 300 entries from %s; root %s, equal to the source checkpoint's",
				map[string]string{"posix": filepath.Join(tl.dir, "data"), "mysql": "the -from-mysql database"}[tt.name],
				base64.StdEncoding.EncodeToString(cp.Hash))
			if err != nil || !strings.Contains(string(out), want) {
				t.Fatalf("docket-log migrate = %v %s, want %q", err, out, want)
			}

			w := tl.startAWS(t, "a", freeAddr(t), a3)
			for leaf, i := range idx {
				r := mustPost(t, w.url, []byte(leaf))
				if r.status != 200 || r.header.Get("Docket-Index") != i || r.header.Get("Docket-Duplicate") != "true" {
					t.Fatalf("POST /add of a migrated entry = %d index %s dup %s, want index %s dup true",
						r.status, r.header.Get("Docket-Index"), r.header.Get("Docket-Duplicate"), i)
				}
			}
		})
	}
}
