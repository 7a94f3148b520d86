package explorer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
)

// serve starts a real log with two issuers, and the explorer over it on a
// loopback port.
func serve(t *testing.T) (*httptest.Server, *Explorer, *tlogtest.POSIXLog, *tlogtest.Issuer) {
	t.Helper()
	k := tlogtest.NewKeyPair(t, "example.com/explored")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is, other := tlogtest.NewIssuer(t), tlogtest.NewIssuer(t)
	l.Add(t, is.Leaf(is.Start("s1")), other.Leaf(other.Start("o1")))
	d, x := is.Call("s1", "Bash")
	l.Add(t, is.Leaves(d, x, is.End("s1"), is.Checkpoint())...)
	v, err := c2sp.NewProofVerifier(k.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), Config{Fetcher: audit.FileFetcher{Root: l.Dir}, Verifier: v, Refresh: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv, e, l, is
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s = %d, want %d: %s", url, resp.StatusCode, want, b)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("GET %s: Content-Security-Policy %q", url, csp)
	}
	return string(b)
}

func TestPages(t *testing.T) {
	srv, e, l, is := serve(t)
	home := get(t, srv.URL+"/", 200)
	for _, want := range []string{`id="verified"`, `<dd id="size">6</dd>`, is.KID, "PreToolUse"} {
		if !strings.Contains(home, want) {
			t.Errorf("home page lacks %q", want)
		}
	}
	entry := get(t, srv.URL+"/entry/2", 200)
	if !strings.Contains(entry, `class="ok" id="inclusion"`) || !strings.Contains(entry, `class="ok" id="signature"`) {
		t.Errorf("entry page does not show inclusion and signature verified:\n%s", entry)
	}
	issuer := get(t, srv.URL+"/issuer/"+is.KID, 200)
	if !strings.Contains(issuer, "issuer_sequence 1–5 all present") {
		t.Errorf("issuer page summary:\n%s", issuer)
	}
	idx := get(t, srv.URL+"/issuer/"+is.KID+"/index.json", 200)
	if s, err := audit.VerifyIssuerIndex([]byte(idx), l.Verifier); err != nil || s.Entries != 5 || s.Complete != 5 {
		t.Errorf("downloaded index: %+v, %v", s, err)
	}
	get(t, srv.URL+"/entry/6", 404)
	get(t, srv.URL+"/entry/x", 400)
	get(t, srv.URL+"/issuer/sb:issuer:nobody", 404)
	// Markup in a receipt is shown as text, never interpreted.
	evil := is.Start("<script>alert(1)</script>")
	l.Add(t, is.Leaf(evil))
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/", "/entry/6"} {
		if body := get(t, srv.URL+page, 200); strings.Contains(body, "<script>alert") {
			t.Errorf("%s renders a session id as markup", page)
		}
	}
}

// TestBrowser drives the page in headless Chromium (playwright-core). CI
// installs both; elsewhere the test says what is missing and skips.
func TestBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s (apt-get install chromium, or set CHROMIUM)", chromium)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	modules := os.Getenv("DOCKET_NODE_MODULES")
	if modules == "" {
		t.Skip("DOCKET_NODE_MODULES is not set to a node_modules holding playwright-core (.ci/run sets it)")
	}
	script, _ := filepath.Abs("testdata/browser.mjs")
	// ES modules resolve packages from the script's directory upwards, so
	// run a copy beside the modules.
	copyPath := filepath.Join(filepath.Dir(modules), "docket-explorer-browser.mjs")
	b, _ := os.ReadFile(script)
	if err := os.WriteFile(copyPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(copyPath) })
	srv, _, _, is := serve(t)
	cmd := exec.CommandContext(t.Context(), node, copyPath, srv.URL+"/", is.KID)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("browser checks failed: %v", err)
	}
	for _, want := range []string{"ok home size=6", "ok entry", "ok download", "ok missing entry"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("browser output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`ok issuer summary=.*issuer_sequence 1–5 all present`).Match(out) {
		t.Errorf("browser saw no complete issuer summary")
	}
}

// gatedLog serves a log directory over loopback HTTP; while closed, its
// entry bundle requests wait until it opens (or their client gives up).
type gatedLog struct {
	srv *httptest.Server
	// mu guards gate and seen.
	mu   sync.Mutex
	gate chan struct{} // nil when open
	seen chan struct{} // gets a value when a request waits at the gate
	// cancelled counts waiting requests whose client gave up.
	cancelled atomic.Int64
}

func newGatedLog(t *testing.T, dir string) *gatedLog {
	g := &gatedLog{seen: make(chan struct{}, 1000)}
	files := http.FileServer(http.Dir(dir))
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		gate := g.gate
		g.mu.Unlock()
		if gate != nil && strings.HasPrefix(r.URL.Path, "/tile/entries/") {
			g.seen <- struct{}{}
			select {
			case <-gate:
			case <-r.Context().Done():
				g.cancelled.Add(1)
				return
			}
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gatedLog) close() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedLog) open() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

func newGatedExplorer(t *testing.T, ctx context.Context) (*Explorer, *httptest.Server, *gatedLog, *tlogtest.POSIXLog, *tlogtest.Issuer) {
	t.Helper()
	k := tlogtest.NewKeyPair(t, "example.com/gated")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s1"), is.End("s1"))...)
	g := newGatedLog(t, l.Dir)
	f, err := audit.NewHTTPFetcher(g.srv.URL, g.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	v, err := c2sp.NewProofVerifier(k.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, Config{Fetcher: f, Verifier: v, Refresh: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv, g, l, is
}

// TestSlowLogDoesNotBlockPages: while a refresh waits on a log that does
// not answer, the home page and 200 concurrent issuer pages are served
// from the last view that verified; the new entries show once the log
// answers.
func TestSlowLogDoesNotBlockPages(t *testing.T) {
	e, srv, g, l, is := newGatedExplorer(t, t.Context())
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	l.Add(t, is.Leaf(is.Start("s2")))
	g.close()
	// A page guard, not a measurement: a page that waited for the log
	// would wait for as long as the gate stays closed.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	page := func(path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := page("/"); code != 200 || !strings.Contains(body, `<dd id="size">2</dd>`) {
		t.Fatalf("home page while the log hangs = %d, want 200 and the last verified size 2:\n%s", code, body)
	}
	<-g.seen // the refresh the home page started waits at the gate
	var wg sync.WaitGroup
	codes := make(chan int, 200)
	for range 200 {
		wg.Go(func() {
			code, _ := page("/issuer/" + is.KID)
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != 200 {
			t.Fatalf("an issuer page while the log hangs = %d, want 200", code)
		}
	}
	if code, _ := page("/"); code != 200 {
		t.Fatalf("home page after 200 issuer pages = %d, want 200", code)
	}
	g.open()
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, body := page("/"); code != 200 || !strings.Contains(body, `<dd id="size">3</dd>`) {
		t.Fatalf("home page once the log answers = %d, want 200 and size 3:\n%s", code, body)
	}
}

// TestClientGivingUpDoesNotCancelRefresh: the first page waits for the
// first view of the log; its client giving up does not cancel the refresh
// it started, which completes once the log answers.
func TestClientGivingUpDoesNotCancelRefresh(t *testing.T) {
	e, srv, g, _, _ := newGatedExplorer(t, t.Context())
	g.close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-g.seen // the refresh waits on the log
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v, want it cancelled", err)
	}
	g.open()
	// Refresh waits for the refresh in flight before it starts its own.
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := g.cancelled.Load(); n != 0 {
		t.Fatalf("%d log requests were cancelled with the client, want 0", n)
	}
	if resp, err := http.Get(srv.URL + "/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("home page = %v, %v; want 200", resp, err)
	}
}

// TestFailuresAre502WithoutPaths: a page whose verification failed is not
// served with 200, and no page shows where the log is stored.
func TestFailuresAre502WithoutPaths(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/failing")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaf(is.Start("s")), []byte(`{"not":"an entry"}`))
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	// Each explorer reads a still copy of the log, which the test alters.
	still := func() (string, *Explorer, *httptest.Server) {
		dir := filepath.Join(t.TempDir(), "log")
		if err := os.CopyFS(dir, os.DirFS(l.Dir)); err != nil {
			t.Fatal(err)
		}
		e, _ := New(t.Context(), Config{Fetcher: audit.FileFetcher{Root: dir}, Verifier: v, Refresh: time.Nanosecond})
		srv := httptest.NewServer(e)
		t.Cleanup(srv.Close)
		return dir, e, srv
	}
	dir, e, srv := still()
	page := func(path string, want int, says string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(b), says) {
			t.Errorf("GET %s = %d, want %d saying %q:\n%s", path, resp.StatusCode, want, says, b)
		}
		if strings.Contains(string(b), dir) || strings.Contains(string(b), l.Dir) {
			t.Errorf("GET %s shows the storage path:\n%s", path, b)
		}
	}
	page("/", 200, "Entries the log should have refused")
	page("/entry/0", 200, `class="ok" id="signature"`)
	page("/entry/1", 502, `class="bad" id="signature"`)

	// The log's checkpoint signed by another key: every page says so.
	forged := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/failing"))
	forged.Add(t, is.Leaf(is.Start("x")))
	cp, _ := os.ReadFile(filepath.Join(forged.Dir, "checkpoint"))
	os.WriteFile(filepath.Join(dir, "checkpoint"), cp, 0o644)
	if err := e.Refresh(t.Context()); err == nil {
		t.Fatal("Refresh over a forged checkpoint: no error")
	}
	for _, path := range []string{"/", "/entry/0", "/issuer/" + is.KID} {
		page(path, 502, "checkpoint does not verify")
	}
	index, _ := http.Get(srv.URL + "/issuer/" + is.KID + "/index.json")
	if index.Body.Close(); index.StatusCode != 502 {
		t.Errorf("index.json over a forged checkpoint = %d, want 502", index.StatusCode)
	}

	// A bundle gone from storage: the reason, not the path.
	l.Add(t, is.Leaf(is.Start("y")))
	dir, _, srv = still()
	os.Remove(filepath.Join(dir, "tile", "entries", "000.p", "3"))
	page("/", 502, "entries could not be read")
	page("/entry/0", 502, "could not be read")
}

// TestLargeIssuerPage: the page of an issuer with more entries than it
// lists shows the newest, the summary of all (computed once for the many
// pages asking at once), and the gaps as runs.
func TestLargeIssuerPage(t *testing.T) {
	srv, e, l, is := serve(t)
	var rs [][]byte
	for i := range cacheFrom + 100 {
		if i == 10 {
			is.Seq += 1 << 40 // a run of 2^40 numbers missing
		}
		rs = append(rs, is.Start(fmt.Sprint("big", i)))
	}
	l.Add(t, is.Leaves(rs...)...)
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	pages := make(chan string, 50)
	for range 50 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/issuer/" + is.KID)
			if err != nil {
				pages <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			pages <- fmt.Sprint(resp.StatusCode, " ", string(b))
		})
	}
	wg.Wait()
	close(pages)
	for page := range pages {
		if !strings.HasPrefix(page, "200 ") || !strings.Contains(page, "issuer_sequence missing: 16-1099511627791") || !strings.Contains(page, "earlier ones are in the index") ||
			strings.Count(page, `<tr><td><a href="/entry/`) != issuerRows {
			t.Fatalf("issuer page:\n%s", page)
		}
	}
}
