package aws_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	tclient "github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/aws"
	"github.com/docketlog/docket/log/aws/s3test"
	"github.com/docketlog/docket/log/logtest"
	//lint:ignore SA1019 migrations from -storage mysql are tested while it exists
	"github.com/docketlog/docket/log/mysql"
	"github.com/docketlog/docket/log/mysql/mysqltest"
	"github.com/docketlog/docket/log/posix"
)

func TestMain(m *testing.M) {
	code := mysqltest.Main(m)
	s3test.Stop()
	os.Exit(code)
}

// place is where a test's log is: a database, a bucket, and the local
// state directory of each writer.
type place struct {
	dsn    string
	bucket s3test.Bucket
	prefix string
}

func newPlace(t *testing.T) place {
	t.Helper()
	b := s3test.NewBucket(t) // skips first: it needs no database
	return place{dsn: mysqltest.Database(t), bucket: b, prefix: "log"}
}

func (p place) options(stateDir string) aws.Options {
	sdk := s3test.Config()
	return aws.Options{DSN: p.dsn, Bucket: p.bucket.Name, Prefix: p.prefix, Endpoint: p.bucket.Endpoint,
		SDKConfig: &sdk, StateDir: stateDir}
}

func (p place) open(t *testing.T, stateDir string) *aws.Storage {
	t.Helper()
	s, err := aws.Open(t.Context(), p.options(stateDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writer is a log over an opened storage; close closes both.
type writer struct {
	*log.Log
	st *aws.Storage
}

func (w *writer) close(t *testing.T) {
	t.Helper()
	if err := errors.Join(w.Log.Close(t.Context()), w.st.Close()); err != nil {
		t.Fatal(err)
	}
}

// signer is a test's log key.
type signer struct {
	s    note.Signer
	vkey string
	pv   *c2sp.ProofVerifier
}

func newSigner(t *testing.T) signer {
	t.Helper()
	k := tlogtest.NewKeyPair(t, "example.com/aws-test-log")
	s, err := note.NewSigner(k.SKey)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c2sp.NewProofVerifier(k.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return signer{s, k.VKey, pv}
}

// verify checks a tlog-proof of leaf and returns the entry's index.
func (k signer) verify(t *testing.T, leaf, p []byte) uint64 {
	t.Helper()
	vp, err := k.pv.Verify(leaf, p)
	if err != nil {
		t.Fatalf("Verify = %v", err)
	}
	return vp.Index
}

// entries returns n new log entries of session sess of issuer is.
func entries(is *tlogtest.Issuer, sess string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = is.Leaf(is.Start(sess))
	}
	return out
}

// start starts a log on the place, with local state in stateDir; mod, if
// given, changes its configuration.
func (p place) start(t *testing.T, k signer, stateDir string, mod ...func(*log.Config)) *writer {
	t.Helper()
	st := p.open(t, stateDir)
	cfg := log.Config{Driver: st.Driver, Index: st.Index, Signer: k.s, VKey: k.vkey, CheckpointInterval: aws.MinCheckpointInterval}
	for _, m := range mod {
		m(&cfg)
	}
	l, err := log.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &writer{l, st}
}

func TestIndex(t *testing.T) {
	logtest.TestIndex(t, func(t *testing.T) (log.Index, func() log.Index) {
		p := newPlace(t)
		s, err := aws.Open(t.Context(), p.options(""))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Index, func() log.Index {
			s.Close()
			if s, err = aws.Open(t.Context(), p.options("")); err != nil {
				t.Fatal(err)
			}
			return s.Index
		}
	})
}

// TestTwoWriters runs two logs on one database and bucket, and submits
// every entry to both at once: each distinct entry gets one index, the
// same from both, with a proof that verifies; the bucket holds each entry
// once.
func TestTwoWriters(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	a := p.start(t, k, t.TempDir())
	b := p.start(t, k, t.TempDir())
	idx := make(map[string]uint64)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range entries(tlogtest.NewIssuer(t), "both", 40) {
		for _, w := range []*writer{a, b} {
			wg.Go(func() {
				r, err := w.Add(t.Context(), e)
				if err != nil {
					t.Error(err)
					return
				}
				got := k.verify(t, e, r.Proof)
				mu.Lock()
				defer mu.Unlock()
				if i, ok := idx[string(e)]; ok && i != got {
					t.Errorf("entry at %d and %d", i, got)
				}
				idx[string(e)] = got
			})
		}
	}
	wg.Wait()
	a.close(t)
	b.close(t)
	if t.Failed() {
		return
	}
	checkBucket(t, p, idx)
}

// TestRestartBeforeIntegration stops a writer whose entries are sequenced
// (durably, in the database) and indexed, but not integrated yet, as a
// crash would, and starts another: it integrates them, and answers each
// with its index, as a duplicate: nothing is appended twice.
func TestRestartBeforeIntegration(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	a := p.start(t, k, t.TempDir())
	// The empty log's checkpoint is published (else the next writer
	// integrates at start).
	for _, err := a.Health(t.Context()); err != nil; _, err = a.Health(t.Context()) {
		time.Sleep(10 * time.Millisecond)
	}

	// The test holds off Tessera's integration (it locks the IntCoord row)
	// while a sequences the entries.
	db, err := sql.Open("mysql", p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hold, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	var integrated uint64
	if err := hold.QueryRow("SELECT seq FROM IntCoord WHERE id = 0 FOR UPDATE").Scan(&integrated); err != nil {
		t.Fatal(err)
	}
	sequenced := entries(tlogtest.NewIssuer(t), "s", 5)
	var wg sync.WaitGroup
	clients, gone := context.WithCancel(t.Context())
	for _, e := range sequenced {
		wg.Go(func() { a.Add(clients, e) }) // cut short by the stop below
	}
	for {
		var covered uint64
		if err := db.QueryRow("SELECT covered FROM DocketIndexState").Scan(&covered); err != nil {
			t.Fatal(err)
		}
		if covered == integrated+uint64(len(sequenced)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Stop a without waiting for its entries to be published; its
	// clients go away.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a.Log.Close(ctx)
	a.st.Close()
	gone()
	wg.Wait()
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}

	b := p.start(t, k, t.TempDir())
	idx := make(map[string]uint64)
	for _, e := range sequenced {
		r, err := b.Add(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		idx[string(e)] = k.verify(t, e, r.Proof)
		if !r.Dup {
			t.Errorf("Add(an entry sequenced before the restart) = index %d, not a duplicate", r.Index)
		}
	}
	b.close(t)
	checkBucket(t, p, idx)
}

// checkBucket checks that the log in the bucket holds exactly the entries
// of idx, each at its index.
func checkBucket(t *testing.T, p place, idx map[string]uint64) {
	t.Helper()
	got := readEntries(t, p)
	if len(got) != len(idx) {
		t.Fatalf("the bucket holds %d entries, want %d", len(got), len(idx))
	}
	for e, i := range idx {
		if !bytes.Equal(got[i], []byte(e)) {
			t.Errorf("entry %d in the bucket is not the entry acknowledged at %d", i, i)
		}
	}
}

// readEntries reads every entry of the log in the bucket, as a client
// would: the checkpoint's size, then the entry bundles.
func readEntries(t *testing.T, p place) [][]byte {
	t.Helper()
	cp := getObject(t, p, layout.CheckpointPath)
	lines := strings.SplitN(string(cp), "\n", 3)
	var size uint64
	if _, err := fmt.Sscan(lines[1], &size); err != nil {
		t.Fatalf("checkpoint %q: %v", cp, err)
	}
	var all [][]byte
	for b := uint64(0); b*layout.EntryBundleWidth < size; b++ {
		var eb api.EntryBundle
		if err := eb.UnmarshalText(getObject(t, p, layout.EntriesPath(b, layout.PartialTileSize(0, b, size)))); err != nil {
			t.Fatal(err)
		}
		all = append(all, eb.Entries...)
	}
	return all
}

// TestStaleRestore: a database or a bucket older than what this writer
// saw published, or than what a witness cosigned, is refused, and so are
// a database behind its bucket and a bucket behind its database.
func TestStaleRestore(t *testing.T) {
	tests := []struct {
		name string
		// restore damages the log of 3 entries as a bad restore would, and
		// returns the options to start with.
		restore func(t *testing.T, p place, db *sql.DB, o aws.Options) aws.Options
		want    string
	}{
		{"database behind the high-water mark", func(t *testing.T, p place, db *sql.DB, o aws.Options) aws.Options {
			emptyDatabase(t, db)
			deleteObjects(t, p)
			return o
		}, "the database holds 0 entries, but this docket-log saw a checkpoint of 3"},
		{"database behind a witness", func(t *testing.T, p place, db *sql.DB, o aws.Options) aws.Options {
			emptyDatabase(t, db)
			deleteObjects(t, p)
			o.StateDir, o.Cosigned, o.CosignedBy = t.TempDir(), 3, "w1"
			return o
		}, "witness w1 has cosigned a checkpoint of this log with 3"},
		{"database behind its bucket", func(t *testing.T, p place, db *sql.DB, o aws.Options) aws.Options {
			emptyDatabase(t, db)
			o.StateDir = t.TempDir()
			return o
		}, "the bucket's checkpoint covers 3 entries, but the database's tree holds 0"},
		{"bucket behind its database", func(t *testing.T, p place, db *sql.DB, o aws.Options) aws.Options {
			deleteObjects(t, p)
			o.StateDir = t.TempDir()
			return o
		}, "the bucket has no entry bundle 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlace(t)
			k := newSigner(t)
			state := t.TempDir()
			w := p.start(t, k, state)
			for _, e := range entries(tlogtest.NewIssuer(t), "s", 3) {
				if _, err := w.Add(t.Context(), e); err != nil {
					t.Fatal(err)
				}
			}
			w.close(t)
			db, err := sql.Open("mysql", p.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			o := tt.restore(t, p, db, p.options(state))
			_, err = aws.Open(t.Context(), o)
			if !errors.Is(err, mysql.ErrStaleTree) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%s) = %v, want ErrStaleTree saying %q", tt.name, err, tt.want)
			}
		})
	}
}

// emptyDatabase makes db an empty log's, as a restore from a backup taken
// before the first entry would.
func emptyDatabase(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{"UPDATE IntCoord SET seq = 0", "UPDATE SeqCoord SET next = 0", "DELETE FROM Seq",
		"UPDATE PubCoord SET size = 0", "DELETE FROM DocketLeaves", "UPDATE DocketIndexState SET covered = 0"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteObjects empties the log's prefix of the bucket.
func deleteObjects(t *testing.T, p place) {
	t.Helper()
	c := p.bucket.Client()
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: awssdk.String(p.bucket.Name), Prefix: awssdk.String(p.prefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	var objs []types.ObjectIdentifier
	for _, o := range out.Contents {
		objs = append(objs, types.ObjectIdentifier{Key: o.Key})
	}
	if len(objs) == 0 {
		t.Fatal("no objects in the bucket")
	}
	if _, err := c.DeleteObjects(t.Context(), &s3.DeleteObjectsInput{Bucket: awssdk.String(p.bucket.Name), Delete: &types.Delete{Objects: objs}}); err != nil {
		t.Fatal(err)
	}
}

// TestPublicReads reads the log from the bucket's public URL, as a client
// without credentials does: the checkpoint, and a partial tile and entry
// bundle; the bucket policy lets it read nothing outside the log's prefix.
func TestPublicReads(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	w := p.start(t, k, t.TempDir())
	defer w.close(t)
	leaf := entries(tlogtest.NewIssuer(t), "s", 1)[0]
	if _, err := w.Add(t.Context(), leaf); err != nil {
		t.Fatal(err)
	}
	url := p.bucket.MakePublic(t, p.prefix)
	get := func(u string) (int, []byte) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, cp := get(url + "/checkpoint"); code != 200 {
		t.Fatalf("GET checkpoint = %d %s", code, cp)
	} else if _, err := k.pv.VerifyCheckpoint(cp); err != nil {
		t.Fatalf("public checkpoint: %v", err)
	}
	code, b := get(url + "/tile/entries/000.p/1")
	var eb api.EntryBundle
	if err := eb.UnmarshalText(b); code != 200 || err != nil || len(eb.Entries) != 1 || !bytes.Equal(eb.Entries[0], leaf) {
		t.Fatalf("GET tile/entries/000.p/1 = %d, %d entries, %v; want the entry", code, len(eb.Entries), err)
	}
	if code, _ := get(url + "/tile/0/000.p/1"); code != 200 {
		t.Errorf("GET tile/0/000.p/1 = %d, want 200", code)
	}
	// Outside the prefix: refused to anonymous readers.
	if _, err := p.bucket.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: awssdk.String(p.bucket.Name),
		Key: awssdk.String("private/secret"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(p.bucket.URL("private") + "/secret"); code != http.StatusForbidden {
		t.Errorf("GET an object outside the log's prefix = %d, want 403", code)
	}
}

// TestGarbageCollectedPartials: once Tessera's garbage collector has
// removed a partial tile or bundle (the full one exists), the log reads
// it from the full one, trimmed to the width asked for.
func TestGarbageCollectedPartials(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	w := p.start(t, k, t.TempDir())
	defer w.close(t)
	var wg sync.WaitGroup
	for _, e := range entries(tlogtest.NewIssuer(t), "s", layout.EntryBundleWidth) {
		wg.Go(func() {
			if _, err := w.Add(t.Context(), e); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// A partial bundle: some width below 256 that the log wrote, or not.
	c := p.bucket.Client()
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: awssdk.String(p.bucket.Name),
		Prefix: awssdk.String(p.prefix + "/tile/entries/000.p/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: awssdk.String(p.bucket.Name), Key: o.Key}); err != nil {
			t.Fatal(err)
		}
	}
	srvURL := serve(t, w.Handler())
	for _, width := range []int{1, 100, 255} {
		resp, err := http.Get(fmt.Sprintf("%s/tile/entries/000.p/%d", srvURL, width))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var eb api.EntryBundle
		if err := eb.UnmarshalText(b); resp.StatusCode != 200 || err != nil || len(eb.Entries) != width {
			t.Errorf("GET tile/entries/000.p/%d = %d, %d entries, %v; want %d entries", width, resp.StatusCode, len(eb.Entries), err, width)
		}
	}
}

// TestRefusesMySQLDatabase: the AWS storage does not take over a
// database that holds a -storage mysql log.
func TestRefusesMySQLDatabase(t *testing.T) {
	p := newPlace(t)
	st, err := mysql.Open(t.Context(), p.dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := aws.Open(t.Context(), p.options("")); err == nil || !strings.Contains(err.Error(), "-storage mysql") {
		t.Fatalf("Open(a -storage mysql database) = %v, want a refusal", err)
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*aws.Options)
		want string
	}{
		{"no bucket", func(o *aws.Options) { o.Bucket = "" }, "no bucket"},
		{"no database name", func(o *aws.Options) { o.DSN = "root@tcp(127.0.0.1:1)/" }, "no database name"},
		{"bad dsn", func(o *aws.Options) { o.DSN = "::" }, "mysql dsn"},
		{"endpoint not a URL", func(o *aws.Options) { o.Endpoint = "127.0.0.1:9000" }, "want an http:// or https:// URL"},
	}
	p := newPlace(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := p.options("")
			tt.mod(&o)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if _, err := aws.Open(ctx, o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%s) = %v, want an error saying %q", tt.name, err, tt.want)
			}
		})
	}
}

// serve serves h on a loopback port for the test and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMigrate moves a log of 300 entries (more than one entry bundle) from
// POSIX storage and from -storage mysql to AWS storage: the migrated
// tree's root is the source checkpoint's, the bucket serves the source's
// checkpoint, and a writer on the new storage answers each old entry with
// its old index as a duplicate, and appends new ones after them.
func TestMigrate(t *testing.T) {
	type source struct {
		log    *log.Log
		reader aws.Source
		close  func() error
	}
	tests := []struct {
		name string
		open func(t *testing.T, k signer) source
	}{
		{"posix", func(t *testing.T, k signer) source {
			dir := t.TempDir()
			st, err := posix.Open(t.Context(), dir, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := log.New(t.Context(), log.Config{Driver: st.Driver, Index: st.Index, Signer: k.s, VKey: k.vkey})
			if err != nil {
				t.Fatal(err)
			}
			return source{l, tclient.FileFetcher{Root: dir}, st.Close}
		}},
		{"mysql", func(t *testing.T, k signer) source {
			st, err := mysql.Open(t.Context(), mysqltest.Database(t), mysql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			l, err := log.New(t.Context(), log.Config{Driver: st.Driver, Index: st.Index, Signer: k.s, VKey: k.vkey,
				CheckpointInterval: mysql.MinCheckpointInterval})
			if err != nil {
				t.Fatal(err)
			}
			return source{l, st.Reader(), st.Close}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlace(t)
			k := newSigner(t)
			src := tt.open(t, k)
			defer src.close()
			old := entries(tlogtest.NewIssuer(t), "s", 300)
			idx := make(map[string]uint64)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, e := range old {
				wg.Go(func() {
					r, err := src.log.Add(t.Context(), e)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					idx[string(e)] = r.Index
					mu.Unlock()
				})
			}
			wg.Wait()
			if err := src.log.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			want, err := src.reader.ReadCheckpoint(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			wantCP, err := k.pv.VerifyCheckpoint(want)
			if err != nil {
				t.Fatal(err)
			}

			st := p.open(t, t.TempDir())
			cp, err := st.Migrate(t.Context(), src.reader, k.pv.LogKey(), 4)
			if err != nil {
				t.Fatalf("Migrate = %v", err)
			}
			if cp.Size != uint64(len(old)) || !bytes.Equal(cp.Hash, wantCP.Root) {
				t.Fatalf("Migrate = size %d root %x, want %d %x", cp.Size, cp.Hash, len(old), wantCP.Root)
			}
			if got := getObject(t, p, "checkpoint"); !bytes.Equal(got, want) {
				t.Errorf("the bucket's checkpoint = %q, want the source's %q", got, want)
			}
			// Migrating again changes nothing.
			if _, err := st.Migrate(t.Context(), src.reader, k.pv.LogKey(), 4); err != nil {
				t.Fatalf("Migrate again = %v", err)
			}
			st.Close()

			w := p.start(t, k, t.TempDir())
			for _, e := range old[:20] {
				r, err := w.Add(t.Context(), e)
				if err != nil {
					t.Fatal(err)
				}
				if got := k.verify(t, e, r.Proof); got != idx[string(e)] || !r.Dup {
					t.Errorf("Add(a migrated entry) = %d dup %v, want %d dup true", got, r.Dup, idx[string(e)])
				}
			}
			e := entries(tlogtest.NewIssuer(t), "new", 1)[0]
			r, err := w.Add(t.Context(), e)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.verify(t, e, r.Proof); got != uint64(len(old)) || r.Dup {
				t.Errorf("Add(a new entry) = %d dup %v, want %d dup false", got, r.Dup, len(old))
			}
			w.close(t)
			idx[string(e)] = uint64(len(old))
			checkBucket(t, p, idx)
		})
	}
}

// getObject returns the object at the log's path p in the bucket.
func getObject(t *testing.T, p place, path string) []byte {
	t.Helper()
	out, err := p.bucket.Client().GetObject(t.Context(), &s3.GetObjectInput{Bucket: awssdk.String(p.bucket.Name),
		Key: awssdk.String(p.prefix + "/" + path)})
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHealthBucketDown: the log reports itself unhealthy once it cannot
// read its checkpoint from the bucket (the S3 server is gone) for
// MaxCheckpointAge, so a load balancer stops sending it writes.
func TestHealthBucketDown(t *testing.T) {
	srv := s3test.NewServer(t)
	p := place{dsn: mysqltest.Database(t), bucket: srv.NewBucket(t), prefix: "log"}
	k := newSigner(t)
	w := p.start(t, k, t.TempDir(), func(c *log.Config) {
		c.RepublishInterval, c.MaxCheckpointAge = time.Second, 2*time.Second
	})
	defer w.Log.Close(context.Background())
	if _, err := w.Add(t.Context(), entries(tlogtest.NewIssuer(t), "s", 1)[0]); err != nil {
		t.Fatal(err)
	}
	if h, err := w.Health(t.Context()); err != nil {
		t.Fatalf("Health() with the bucket up = %+v, %v; want ok", h, err)
	}
	srv.Stop()
	for {
		h, err := w.Health(t.Context())
		if err != nil {
			// The health probe reads the published checkpoint from storage
			// on every call (issue 20): with the bucket down it cannot.
			if h.Status != "unservable" || !strings.Contains(err.Error(), "cannot be read from storage") {
				t.Fatalf("Health() with the bucket down = %+v, %v; want unservable: the checkpoint cannot be read", h, err)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWithoutTriggerPrivilege: a database user that may not create the
// publication trigger still runs the log (the trigger only saves latency).
func TestWithoutTriggerPrivilege(t *testing.T) {
	p := newPlace(t)
	root, err := sql.Open("mysql", p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var db string
	if err := root.QueryRow("SELECT DATABASE()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	user := "u" + db
	for _, q := range []string{
		"CREATE USER '" + user + "'@'localhost' IDENTIFIED BY 'pw'",
		"GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX ON " + db + ".* TO '" + user + "'@'localhost'",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	p.dsn = user + ":pw@" + strings.TrimPrefix(p.dsn, "root@")
	k := newSigner(t)
	w := p.start(t, k, t.TempDir())
	defer w.close(t)
	e := entries(tlogtest.NewIssuer(t), "s", 1)[0]
	r, err := w.Add(t.Context(), e)
	if err != nil {
		t.Fatalf("Add without the trigger = %v", err)
	}
	k.verify(t, e, r.Proof)
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", db).Scan(&n); err != nil || n != 0 {
		t.Fatalf("triggers in the database = %d, %v; want none (the user may not create one)", n, err)
	}
}
