package docketcmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// The tests of this file attack the readers of a log (docket audit,
// monitor, explore, verify-index, verify-evidence) through the commands, as
// a hostile log, a hostile CDN in front of one, or anyone who may write to
// an open log would (issue 20, family 4).

// readerLog starts a real Tessera POSIX log and returns it with its key.
func readerLog(t *testing.T) (*tlogtest.POSIXLog, string) {
	t.Helper()
	k := tlogtest.NewKeyPair(t, "example.com/readers")
	return tlogtest.NewPOSIX(t, t.TempDir(), k), k.VKey
}

// allocated runs f and returns the bytes the process allocated meanwhile.
// The tests of this file do not run in parallel, so that is f's.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// explore runs docket explore ARGS in this process until the test ends and
// returns the URL it serves, once its follower has verified the log or
// failed to (its /health says so).
func explore(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, append([]string{"explore", "-listen", "127.0.0.1:0", "-state", t.TempDir()}, args...), nil, w, io.Discard)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	line := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.TeeReader(r, &lineCatcher{c: line}))
		_ = b
	}()
	l := <-line
	m := regexp.MustCompile(`http://\S+/`).FindString(l)
	if m == "" {
		t.Fatalf("docket explore said %q, want its URL", l)
	}
	u := strings.TrimSuffix(m, "/")
	for {
		_, body := getPage(t, u+"/health")
		if !strings.Contains(body, `"starting"`) && !strings.Contains(body, `"catching_up"`) {
			return u
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lineCatcher sends the first line written to it.
type lineCatcher struct {
	c    chan string
	b    []byte
	sent bool
}

func (f *lineCatcher) Write(p []byte) (int, error) {
	if !f.sent {
		f.b = append(f.b, p...)
		if i := bytes.IndexByte(f.b, '\n'); i >= 0 {
			f.sent = true
			f.c <- string(f.b[:i])
		}
	}
	return len(p), nil
}

// getPage GETs url and returns the status and body.
func getPage(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func writeJWKS(t *testing.T, dir string, issuers ...*tlogtest.Issuer) string {
	t.Helper()
	var keys []any
	for _, is := range issuers {
		keys = append(keys, receipts.JWK(is.Pub))
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	path := filepath.Join(dir, "issuers.jwks")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestIssuerSequence2To50DoesNotHangReaders: receipts with issuer_sequence
// 2^50 and 2^63-1, which anyone may submit to an open log, make each reader
// answer at once with the gap as one range, instead of looping or
// allocating up to the number.
func TestIssuerSequence2To50DoesNotHangReaders(t *testing.T) {
	l, vkey := readerLog(t)
	big := tlogtest.NewIssuer(t) // 1, then 2^50
	l.Add(t, big.Leaf(big.Start("s1")))
	big.Seq = 1<<50 - 1
	l.Add(t, big.Leaf(big.End("s1")))
	maxed := tlogtest.NewIssuer(t) // 1, then 2^63-1
	l.Add(t, maxed.Leaf(maxed.Start("m")))
	maxed.Seq = math.MaxInt64 - 1
	l.Add(t, maxed.Leaf(maxed.End("m")))
	counted := tlogtest.NewIssuer(t) // 1, then a checkpoint counting 2^50+1
	l.Add(t, counted.Leaf(counted.Start("c")))
	counted.Seq = 1 << 50
	l.Add(t, counted.Leaf(counted.Checkpoint()))
	dir := t.TempDir()

	t.Run("audit", func(t *testing.T) {
		code, out, errs := runDocket(t, "", "audit", "-log", l.Dir, "-log-key", vkey, "-evidence", filepath.Join(dir, "ev"))
		if code != 1 {
			t.Fatalf("docket audit = %d, want 1: %s%s", code, out, errs)
		}
		for _, want := range []string{
			"issuer " + big.KID + ": issuer_sequence 2-1125899906842623 missing",
			"issuer " + maxed.KID + ": issuer_sequence 2-9223372036854775806 missing",
			"issuer_sequence_gap: issuer " + counted.KID + ": issuer_sequence 2-1125899906842624 missing",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("docket audit output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("monitor", func(t *testing.T) {
		code, out, errs := runDocket(t, "", "monitor", "-once", "-log", l.Dir, "-log-key", vkey, "-state", filepath.Join(dir, "mon"))
		if code != 1 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"kind":"issuer_sequence_gap"`) || !strings.Contains(out, "issuer_sequence 2-1125899906842624 missing") {
			t.Fatalf("docket monitor -once = %d, want 1 and one gap alert:\n%s%s", code, out, errs)
		}
	})
	t.Run("explore and verify-index", func(t *testing.T) {
		u := explore(t, "-log", l.Dir, "-log-key", vkey)
		code, page := getPage(t, u+"/issuer/"+big.KID)
		if code != 200 || !strings.Contains(page, "issuer_sequence missing: 2-1125899906842623") {
			t.Fatalf("issuer page = %d, want 200 with the gap as a range:\n%s", code, page)
		}
		code, index := getPage(t, u+"/issuer/"+big.KID+"/index.json")
		if code != 200 {
			t.Fatalf("index.json = %d: %s", code, index)
		}
		file := filepath.Join(dir, "index.json")
		os.WriteFile(file, []byte(index), 0o644)
		code, out, errs := runDocket(t, "", "verify-index", "-log-key", vkey, file)
		if code != 1 || !strings.Contains(out, "missing issuer_sequence: 1 run\n    2-1125899906842623\n") {
			t.Fatalf("docket verify-index = %d, want 1 and one run:\n%s%s", code, out, errs)
		}
		code, out, errs = runDocket(t, "", "verify-index", "-json", "-log-key", vkey, file)
		if code != 1 || !strings.Contains(out, `"gaps":[{"from":2,"to":1125899906842623}]}`) || strings.Count(out, "\n") != 1 {
			t.Fatalf("docket verify-index -json = %d, want 1 and one object with one gap:\n%s%s", code, out, errs)
		}
	})
}

// hostileBundles are what a hostile log directory holds in place of a
// partial bundle of width 3.
var hostileBundles = []struct {
	name string
	// write replaces the bundle file at path.
	write func(t *testing.T, path string)
	want  string
}{
	{"zero-byte bundle of 64 MiB refused before read", func(t *testing.T, path string) {
		// Sparse: 64 MiB of zero bytes, 2^25 empty entries once parsed.
		if err := os.Truncate(path, 64<<20); err != nil {
			t.Fatal(err)
		}
	}, "larger than tlog-tiles allows: 67108864 bytes, limit 196611"},
	{"bundle with more entries than its width", func(t *testing.T, path string) {
		if err := os.WriteFile(path, make([]byte, 8), 0o644); err != nil { // four empty entries
			t.Fatal(err)
		}
	}, "larger than tlog-tiles allows: more than 3 entries"},
	{"bundle that is a symlink to /dev/zero", func(t *testing.T, path string) {
		os.Remove(path)
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	}, "not a regular file"},
}

// TestHostileBundleFiles: a storage directory whose entry bundle is
// oversized is refused by every reader before it is read, within the caps
// that hold over HTTP too; the explorer says why without its storage path,
// with a 502.
func TestHostileBundleFiles(t *testing.T) {
	for _, tt := range hostileBundles {
		t.Run(tt.name, func(t *testing.T) {
			l, vkey := readerLog(t)
			is := tlogtest.NewIssuer(t)
			l.Add(t, is.Leaves(is.Start("s"), is.End("s"), is.Checkpoint())...)
			tt.write(t, filepath.Join(l.Dir, "tile", "entries", "000.p", "3"))
			for _, args := range [][]string{
				{"audit", "-log", l.Dir, "-log-key", vkey},
				{"monitor", "-once", "-log", l.Dir, "-log-key", vkey, "-state", t.TempDir()},
			} {
				var code int
				var out, errs string
				if n := allocated(func() { code, out, errs = runDocket(t, "", args...) }); n > 32<<20 {
					t.Errorf("docket %s allocated %d bytes, want less than 32 MiB", args[0], n)
				}
				if code != 2 || !strings.Contains(errs, tt.want) {
					t.Errorf("docket %s = %d, want 2 and %q:\n%s%s", args[0], code, tt.want, out, errs)
				}
			}
			u := explore(t, "-log", l.Dir, "-log-key", vkey)
			for _, page := range []string{"/", "/entry/0", "/issuer/" + is.KID} {
				code, body := getPage(t, u+page)
				if code != http.StatusBadGateway || !strings.Contains(body, "could not be read or verified") {
					t.Errorf("GET %s = %d, want 502 saying why:\n%s", page, code, body)
				}
				if strings.Contains(body, l.Dir) || strings.Contains(body, "tile/entries") {
					t.Errorf("GET %s shows a storage path:\n%s", page, body)
				}
			}
		})
	}
}

var (
	bombOnce sync.Once
	bomb     []byte
)

// gzipBomb is 1 MiB of gzip that inflates to 1 GiB of zero bytes: 64
// copies of one gzip member of 16 MiB of zeros, which gzip readers read
// one after the other.
func gzipBomb() []byte {
	bombOnce.Do(func() {
		var member bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
		zw.Write(make([]byte, 16<<20))
		zw.Close()
		bomb = bytes.Repeat(member.Bytes(), 64)
	})
	return bomb
}

// hostileCDN serves the log in dir over loopback HTTP, as a CDN in front of
// it would, but answers the requests that match with a gzip bomb.
func hostileCDN(t *testing.T, dir string, match func(path string) bool) string {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r.URL.Path) {
			files.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(gzipBomb())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGzipBombFromHostileCDN: 1 MiB of gzip that inflates to 1 GiB, served
// by a real loopback HTTP server in place of an entry bundle or a hash
// tile, costs each reader what a legal bundle does: the bytes it takes are
// counted after the transport inflates them.
func TestGzipBombFromHostileCDN(t *testing.T) {
	l, vkey := readerLog(t)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s"), is.End("s"), is.Checkpoint())...)
	bundles := hostileCDN(t, l.Dir, func(p string) bool { return strings.HasPrefix(p, "/tile/entries/") })
	for _, args := range [][]string{
		{"audit", "-log", bundles, "-log-key", vkey},
		{"monitor", "-once", "-log", bundles, "-log-key", vkey, "-state", t.TempDir()},
	} {
		var code int
		var out, errs string
		if n := allocated(func() { code, out, errs = runDocket(t, "", args...) }); n > 64<<20 {
			t.Errorf("docket %s allocated %d bytes, want less than 64 MiB", args[0], n)
		}
		if code != 2 || !strings.Contains(errs, "larger than tlog-tiles allows: more than 196611 bytes") {
			t.Errorf("docket %s = %d, want 2 and the bundle refused:\n%s%s", args[0], code, out, errs)
		}
	}
	u := explore(t, "-log", bundles, "-log-key", vkey)
	var code int
	var body string
	if n := allocated(func() { code, body = getPage(t, u+"/") }); n > 64<<20 || code != http.StatusBadGateway || !strings.Contains(body, "larger than tlog-tiles allows") {
		t.Errorf("explorer home over a gzip bomb = %d after %d bytes allocated, want 502 and the reason:\n%s", code, n, body)
	}

	// Honest bundles, bombed tiles: the log reads, but an entry's inclusion
	// proof cannot be built, and the entry page says so with a 502.
	tiles := hostileCDN(t, l.Dir, func(p string) bool { return strings.HasPrefix(p, "/tile/0/") })
	u = explore(t, "-log", tiles, "-log-key", vkey)
	if code, body := getPage(t, u+"/"); code != 200 {
		t.Fatalf("explorer home = %d, want 200:\n%s", code, body)
	}
	if n := allocated(func() { code, body = getPage(t, u+"/entry/1") }); n > 64<<20 || code != http.StatusBadGateway || !strings.Contains(body, "NOT included") {
		t.Errorf("entry page with bombed tiles = %d after %d bytes allocated, want 502 and NOT included:\n%s", code, n, body)
	}
}

// TestFloodsAreSummarised: anyone may write to an open log. A stranger's
// entries are one monitor alert per stranger with a count (one evidence
// file, one -exec run), and at most MaxPerKind strangers are listed; a
// withheld session is one audit finding with a count and one evidence file.
func TestFloodsAreSummarised(t *testing.T) {
	l, vkey := readerLog(t)
	known := tlogtest.NewIssuer(t)
	shown := append([][]byte{known.Start("shown")}, known.End("shown"))
	leaves := known.Leaves(shown...)
	for range 300 { // one session of 300 receipts
		leaves = append(leaves, known.Leaf(known.Start("hidden")))
	}
	for i := range 150 { // and 150 sessions of one
		leaves = append(leaves, known.Leaf(known.Start(fmt.Sprint("one-", i))))
	}
	flooder := tlogtest.NewIssuer(t)
	for i := range 300 {
		leaves = append(leaves, flooder.Leaf(flooder.Start("f"+string(rune('a'+i%26)))))
	}
	for range 120 { // 120 more strangers, one entry each
		s := tlogtest.NewIssuer(t)
		leaves = append(leaves, s.Leaf(s.Start("x")))
	}
	l.Add(t, leaves...)
	dir := t.TempDir()
	jwks := writeJWKS(t, dir, known)

	runs := filepath.Join(dir, "runs")
	code, out, errs := runDocket(t, "", "monitor", "-once", "-log", l.Dir, "-log-key", vkey, "-jwks", jwks, "-state", filepath.Join(dir, "mon"),
		"-exec", "echo run >> "+runs)
	if code != 1 {
		t.Fatalf("docket monitor = %d, want 1:\n%s", code, errs)
	}
	alerts := strings.Split(strings.TrimSpace(out), "\n")
	if len(alerts) != 101 {
		t.Fatalf("docket monitor wrote %d alerts, want 100 strangers and one summary", len(alerts))
	}
	if !strings.Contains(alerts[0], `"count":300`) || !strings.Contains(alerts[0], flooder.KID) {
		t.Errorf("first alert %s, want the flooder with count 300", alerts[0])
	}
	if last := alerts[100]; !strings.Contains(last, "21 more unknown_issuer findings") || !strings.Contains(last, `"count":21`) {
		t.Errorf("last alert %s, want a summary of the 21 other strangers", last)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 101 {
		t.Errorf("-exec ran %d times, want 101", strings.Count(string(b), "run"))
	}
	evidence, _ := filepath.Glob(filepath.Join(dir, "mon", "evidence", "*", "*-unknown_issuer.json"))
	if len(evidence) != 100 {
		t.Errorf("%d unknown_issuer evidence files, want 100", len(evidence))
	}

	chain := writeChain(t, dir, shown)
	code, out, errs = runDocket(t, "", "audit", "-log", l.Dir, "-log-key", vkey, "-jwks", jwks, "-json", "-evidence", filepath.Join(dir, "ev"), chain)
	var withheld []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"kind":"withheld"`) {
			withheld = append(withheld, line)
		}
	}
	if code != 1 || len(withheld) != 101 || !strings.Contains(withheld[0], `"session":"hidden"`) || !strings.Contains(withheld[0], `"count":300`) ||
		!strings.Contains(withheld[100], "51 more withheld findings (51 log entries") {
		t.Fatalf("docket audit = %d, want 1, the hidden session counting 300, 99 more and a summary of 51:\n%s%s", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "ev", "*-withheld.json")); len(files) != 100 {
		t.Errorf("%d withheld evidence files, want 100", len(files))
	}
}

// TestVerifyEvidenceAndIndexAreStrict: an evidence file or an index with
// two members whose names differ only in case, or a member they do not
// define, is undecidable (exit 2), and so is evidence of an unknown kind.
func TestVerifyEvidenceAndIndexAreStrict(t *testing.T) {
	l, vkey := readerLog(t)
	is := tlogtest.NewIssuer(t)
	shown := is.Start("shown")
	l.Add(t, is.Leaves(shown, is.Start("withheld"))...)
	dir := t.TempDir()
	jwks := writeJWKS(t, dir, is)
	chain := writeChain(t, dir, [][]byte{shown})
	if code, _, errs := runDocket(t, "", "audit", "-log", l.Dir, "-log-key", vkey, "-jwks", jwks, "-evidence", filepath.Join(dir, "ev"), chain); code != 1 {
		t.Fatalf("docket audit = %d: %s", code, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ev", "*-withheld.json"))
	if len(files) != 1 {
		t.Fatalf("evidence files %v", files)
	}
	good, _ := os.ReadFile(files[0])
	tests := []struct {
		name string
		edit func(string) string
		want int
	}{
		{"as written", func(s string) string { return s }, 1},
		{"a second kind in capitals", func(s string) string {
			return strings.Replace(s, `"kind": "withheld"`, `"kind": "withheld", "KIND": "bad_entry"`, 1)
		}, 2},
		{"a second kind with the Kelvin sign", func(s string) string {
			return strings.Replace(s, `"kind": "withheld"`, `"kind": "withheld", "\u212aind": "bad_entry"`, 1)
		}, 2},
		{"the kind twice", func(s string) string {
			return strings.Replace(s, `"kind": "withheld"`, `"kind": "fork", "kind": "withheld"`, 1)
		}, 2},
		{"kind in capitals alone", func(s string) string { return strings.Replace(s, `"kind"`, `"Kind"`, 1) }, 2},
		{"an unknown member", func(s string) string {
			return strings.Replace(s, `"kind": "withheld"`, `"kind": "withheld", "proven": true`, 1)
		}, 2},
		{"an unknown kind", func(s string) string { return strings.Replace(s, `"kind": "withheld"`, `"kind": "made_up"`, 1) }, 2},
		{"an entry's index twice", func(s string) string { return strings.Replace(s, `"index":`, `"INDEX": 0, "index":`, 1) }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.edit(string(good))
			if tt.want != 1 && text == string(good) {
				t.Fatal("the edit changed nothing")
			}
			file := filepath.Join(t.TempDir(), "evidence.json")
			os.WriteFile(file, []byte(text), 0o644)
			if code, out, errs := runDocket(t, "", "verify-evidence", "-log-key", vkey, file); code != tt.want {
				t.Errorf("docket verify-evidence = %d, want %d:\n%s%s", code, tt.want, out, errs)
			}
		})
	}

	u := explore(t, "-log", l.Dir, "-log-key", vkey)
	code, index := getPage(t, u+"/issuer/"+is.KID+"/index.json")
	if code != 200 {
		t.Fatalf("index.json = %d", code)
	}
	for _, tt := range []struct {
		name, text string
		want       int
	}{
		{"as served", index, 0},
		{"a second issuer in capitals", strings.Replace(index, `"issuer":`, `"ISSUER":"sb:issuer:someoneelse","issuer":`, 1), 2},
		{"an unknown member", strings.Replace(index, `"issuer":`, `"complete":true,"issuer":`, 1), 2},
	} {
		t.Run("verify-index "+tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "index.json")
			os.WriteFile(file, []byte(tt.text), 0o644)
			if code, out, errs := runDocket(t, "", "verify-index", "-log-key", vkey, file); code != tt.want {
				t.Errorf("docket verify-index = %d, want %d:\n%s%s", code, tt.want, out, errs)
			}
		})
	}
}

// TestBadEntryThatIsNotUTF8IsProven: a log that accepts anything may hold
// an entry that is not UTF-8, which no JSON string can carry; its evidence
// carries it as base64, and verify-evidence proves it.
func TestBadEntryThatIsNotUTF8IsProven(t *testing.T) {
	l, vkey := readerLog(t)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaf(is.Start("s")), []byte("\xff\xfe not an entry \x80"))
	dir := t.TempDir()
	code, out, errs := runDocket(t, "", "audit", "-log", l.Dir, "-log-key", vkey, "-evidence", dir)
	if code != 1 || !strings.Contains(out, "bad_entry: log entry 1") {
		t.Fatalf("docket audit = %d, want 1 and a bad entry:\n%s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*-bad_entry.json"))
	if len(files) != 1 {
		t.Fatalf("evidence files %v", files)
	}
	code, out, errs = runDocket(t, "", "verify-evidence", "-log-key", vkey, files[0])
	if code != 1 || !strings.Contains(out, "PROVEN bad_entry") || !strings.Contains(out, "(not UTF-8; base64)") {
		t.Fatalf("docket verify-evidence = %d, want 1 and PROVEN bad_entry:\n%s%s", code, out, errs)
	}
}
