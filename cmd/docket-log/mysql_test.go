package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	tclient "github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/fsck"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log/mysql/mysqltest"
)

// startMySQL starts a docket-log writer of tl's log in the database dsn,
// with local state in its own directory under tl.dir, and more flags.
func (tl *testLog) startMySQL(t *testing.T, name, addr, dsn string, args ...string) *proc {
	t.Helper()
	return start(t, logBin, addr, "/checkpoint", append([]string{"-listen", addr, "-key", tl.key,
		"-storage", "mysql", "-mysql-dsn", dsn, "-storage-dir", filepath.Join(tl.dir, name)}, args...)...)
}

// TestMySQLWriters runs two docket-log processes on one database under
// concurrent load in which every entry is submitted to both at once, and
// SIGKILLs one of them mid-load (see testWriters); the log is read from
// the surviving writer.
func TestMySQLWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two writers and kills one under load")
	}
	dsn := mysqltest.Database(t)
	tl := newTestLog(t)
	a := tl.startMySQL(t, "a", tl.addr, dsn)
	b := tl.startMySQL(t, "b", freeAddr(t), dsn)
	testWriters(t, tl, a, b, a.url)
}

// testWriters loads two writers a and b of tl's log: every entry is
// submitted to both at once, and b is SIGKILLed mid-load. The log, read
// through the tlog-tiles API at read, holds exactly the distinct entries,
// each once, every acknowledged entry is at the index its verified proof
// gave, and Tessera's fsck passes over read.
func testWriters(t *testing.T, tl *testLog, a, b *proc, read string) {
	t.Helper()
	pv, err := c2sp.NewProofVerifier(tl.vkey, nil)
	if err != nil {
		t.Fatal(err)
	}
	is := newIssuer()
	const workers, perWorker = 32, 8
	var (
		mu     sync.Mutex
		acked  = map[string]uint64{} // entry → index
		proved int
		killed = make(chan struct{})
	)
	// submit posts leaf to u until it is proved, falling back to the
	// first writer when u is down; it records the index.
	submit := func(u string, leaf []byte) {
		tries := 0
		url := func() string {
			if tries++; tries > 1 {
				return a.url
			}
			return u
		}
		vp, ok := postProved(t, url, leaf, pv)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if i, ok := acked[string(leaf)]; ok && i != vp.Index {
			t.Errorf("one entry acknowledged at %d and at %d", i, vp.Index)
		}
		acked[string(leaf)] = vp.Index
		if proved++; proved == workers*perWorker*2/3 {
			b.cmd.Process.Kill() // SIGKILL mid-load
			close(killed)
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				leaf := is.entry(t, fmt.Sprintf("w%d", w), int64(i+1))
				var both sync.WaitGroup
				both.Go(func() { submit(a.url, leaf) })
				both.Go(func() { submit(b.url, leaf) })
				both.Wait()
			}
		})
	}
	wg.Wait()
	<-killed

	cp, _, _, err := f_log.ParseCheckpoint(get(t, read+"/checkpoint").body, tl.verifier.Name(), tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	if len(acked) != workers*perWorker || cp.Size != uint64(len(acked)) {
		t.Fatalf("%d distinct entries acknowledged, log size %d; want %d both", len(acked), cp.Size, workers*perWorker)
	}
	seen := map[uint64]bool{}
	for _, i := range acked {
		if seen[i] {
			t.Errorf("index %d acknowledged for two entries", i)
		}
		seen[i] = true
	}

	// Every acknowledged entry is in the served entry bundles at its index.
	u, _ := url.Parse(read + "/")
	f, err := tclient.NewHTTPFetcher(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var entries [][]byte
	for n := uint64(0); n*layout.EntryBundleWidth < cp.Size; n++ {
		raw, err := f.ReadEntryBundle(ctx, n, layout.PartialTileSize(0, n, cp.Size))
		if err != nil {
			t.Fatal(err)
		}
		var eb api.EntryBundle
		if err := eb.UnmarshalText(raw); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, eb.Entries...)
	}
	for leaf, i := range acked {
		if i >= uint64(len(entries)) || !bytes.Equal(entries[i], []byte(leaf)) {
			t.Errorf("entry %d in the served bundles is not the entry acknowledged there", i)
		}
	}

	// Tessera's fsck over the served tiles.
	hasher := func(bundle []byte) ([][]byte, error) {
		var eb api.EntryBundle
		if err := eb.UnmarshalText(bundle); err != nil {
			return nil, err
		}
		hs := make([][]byte, len(eb.Entries))
		for i, e := range eb.Entries {
			hs[i] = rfc6962.DefaultHasher.HashLeaf(e)
		}
		return hs, nil
	}
	if err := fsck.New(tl.verifier.Name(), tl.verifier, f, hasher, fsck.Opts{N: 2}).Check(ctx); err != nil {
		t.Errorf("fsck: %v", err)
	}
}

// TestMySQLStaleRestore restores the database from a copy older than a
// checkpoint the writer published: docket-log refuses to start, and says
// why and how to recover.
func TestMySQLStaleRestore(t *testing.T) {
	for _, by := range []string{"high-water file", "witness"} {
		t.Run(by, func(t *testing.T) { testStaleRestore(t, by == "witness") })
	}
}

// testStaleRestore restores a database that held 3 entries to an empty
// copy. The docket-log that wrote it knows from its high-water file; a new
// one (no local state) learns it from a witness that cosigned the larger
// tree, as it serves it at GET <witness>/<log ID>/checkpoint.
func testStaleRestore(t *testing.T, byWitness bool) {
	dsn := mysqltest.Database(t)
	tl := newTestLog(t)
	p := tl.startMySQL(t, "a", tl.addr, dsn)
	is := newIssuer()
	for i := range 3 {
		if r := mustPost(t, p.url, is.entry(t, "restore", int64(i+1))); r.status != 200 {
			t.Fatalf("POST /add = %d %s", r.status, r.body)
		}
	}
	cp := get(t, p.url+"/checkpoint").body
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	// The "backup" is of an empty log.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"DELETE FROM TreeState", "DELETE FROM Checkpoint", "DELETE FROM TiledLeaves", "DELETE FROM Subtree"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-listen", tl.addr, "-key", tl.key, "-storage", "mysql", "-mysql-dsn", dsn, "-storage-dir", filepath.Join(tl.dir, "a")}
	want := "restored from an older copy"
	if byWitness {
		// A witness that cosigned the log at size 3; this docket-log's
		// storage directory is new.
		policy := tl.cosignedBy(t, "w1", cp)
		args = append(args[:len(args)-1], filepath.Join(tl.dir, "b"), "-witness-policy", policy)
		want = "witness w1 has cosigned a checkpoint of this log with 3"
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, logBin, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "point-in-time recovery") {
		t.Fatalf("docket-log on a restored database = %v\n%s\nwant a refusal (%q) that explains the recovery", err, string(out), want)
	}
}

// cosignedBy serves checkpoint cp of tl's log as the latest that a witness
// named name has cosigned (GET /<log ID>/checkpoint), and returns the path
// of a witness policy that lists it.
func (tl *testLog) cosignedBy(t *testing.T, name string, cp []byte) string {
	t.Helper()
	w := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+c2sp.LogID(tl.verifier.Name())+"/checkpoint" {
			http.NotFound(w, r)
			return
		}
		w.Write(cp)
	}))
	t.Cleanup(w.Close)
	_, wvkey, err := c2sp.GenerateKey(name + ".example")
	if err != nil {
		t.Fatal(err)
	}
	cosig, err := c2sp.CosignatureVKey(wvkey)
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(t.TempDir(), "witnesses.policy")
	if err := os.WriteFile(policy, fmt.Appendf(nil, "log %s\nwitness %s %s %s\nquorum %s\n", tl.vkey, name, cosig, w.URL, name), 0o644); err != nil {
		t.Fatal(err)
	}
	return policy
}
