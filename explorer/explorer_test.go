package explorer

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/logclient"
	"github.com/docketlog/docket/receipts"
)

// newExplorer starts an explorer over the log in dir with its index at
// index ("" for a temporary one), closed at the end of the test.
func newExplorer(t *testing.T, f Fetcher, v *c2sp.ProofVerifier, index string) (*Explorer, *httptest.Server) {
	t.Helper()
	e, err := New(t.Context(), Config{Fetcher: f, Verifier: v, Refresh: time.Hour, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv
}

// serve starts a real log with two issuers, and the explorer over it on a
// loopback port, once it has verified the log.
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
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	return srv, e, l, is
}

func fetch(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if csp := resp.Header.Get("Content-Security-Policy"); csp != csp_ {
		t.Errorf("GET %s: Content-Security-Policy %q, want %q", url, csp, csp_)
	}
	return resp.StatusCode, resp.Header, string(b)
}

const csp_ = csp

func get(t *testing.T, url string, want int) string {
	t.Helper()
	code, _, body := fetch(t, url)
	if code != want {
		t.Fatalf("GET %s = %d, want %d: %s", url, code, want, body)
	}
	return body
}

func TestPages(t *testing.T) {
	srv, e, l, is := serve(t)
	home := get(t, srv.URL+"/", 200)
	for _, want := range []string{`id="verified"`, `<dd id="size">6</dd>`, is.KID, "EXECUTION · Bash · of ALLOW", `class="tag exec"`, "SESSION START", `<svg class="chart"`} {
		if !strings.Contains(home, want) {
			t.Errorf("home page lacks %q", want)
		}
	}
	if strings.Contains(home, "style=") || strings.Contains(home, "<script") {
		t.Errorf("home page has inline style or script, which the CSP refuses")
	}
	entry := get(t, srv.URL+"/entry/3", 200)
	for _, want := range []string{`class="ok" id="inclusion"`, `class="ok" id="signature"`, `id="decision-link"`, `href="/entry/2" rel="prev"`, `href="/entry/4" rel="next"`, `id="previous-receipt"`} {
		if !strings.Contains(entry, want) {
			t.Errorf("entry page lacks %q:\n%s", want, entry)
		}
	}
	issuer := get(t, srv.URL+"/issuer/"+is.KID, 200)
	if !strings.Contains(issuer, "issuer_sequence 1–5 all present") {
		t.Errorf("issuer page summary:\n%s", issuer)
	}
	idx := get(t, srv.URL+"/issuer/"+is.KID+"/index.json", 200)
	if s, err := audit.VerifyIssuerIndex([]byte(idx), l.Verifier); err != nil || s.Entries != 5 || s.Complete != 5 {
		t.Errorf("downloaded index: %+v, %v", s, err)
	}
	for _, tt := range []struct {
		name, path string
		want       int
	}{
		{"entry past the log", "/entry/6", 404},
		{"entry not a number", "/entry/x", 400},
		{"unknown issuer", "/issuer/sb:issuer:nobody", 404},
		{"unknown session", "/session/999", 404},
		{"bad receipt hash", "/receipt/sha256:zz", 400},
		{"absent receipt", "/receipt/sha256:" + strings.Repeat("0", 64), 404},
		{"bad cursor", "/?before=x", 400},
		{"bad decision filter", "/search?decision=maybe", 400},
		{"bad time filter", "/search?from=yesterday", 400},
		{"style sheet", "/style.css", 200},
		{"health", "/health", 200},
	} {
		t.Run(tt.name, func(t *testing.T) { get(t, srv.URL+tt.path, tt.want) })
	}
	// Markup in a receipt is shown as text, never interpreted.
	evil := is.Start("<script>alert(1)</script>")
	l.Add(t, is.Leaf(evil))
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"/", "/entry/6", "/search?q=%3Cscript%3Ealert(1)%3C/script%3E"} {
		if body := get(t, srv.URL+page, 200); strings.Contains(body, "<script>alert") {
			t.Errorf("%s renders a session id as markup", page)
		}
	}
}

// sessionLog builds a log with a session of every kind of receipt: allow
// and its execution, a deny, an ask, an observe-mode deny not enforced, an
// unmediated call, and a session_end.
func sessionLog(t *testing.T) (*tlogtest.POSIXLog, *tlogtest.Issuer, *c2sp.ProofVerifier) {
	k := tlogtest.NewKeyPair(t, "example.com/sessions")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	no := false
	at := "2026-11-26T08:55:15.000Z"
	dec := func(tool, decision string, ids ...string) []byte {
		return is.Sign("sess-a", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: tool, ToolInputHash: "sha256:" + tool,
			Decision: decision, Reason: "cedar_" + decision, PolicyIDs: ids, IssuedAt: at})
	}
	rs := [][]byte{is.Start("sess-a")}
	d, x := is.Call("sess-a", "Bash")
	rs = append(rs, d, x, dec("Read", "deny", "secrets-by-name"), dec("WebFetch", "require_approval", "ask-network"))
	rs = append(rs, is.Sign("sess-a", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Write", Decision: "deny",
		Reason: "cedar_deny", PolicyIDs: []string{"no-writes"}, Enforced: &no, IssuedAt: at}))
	rs = append(rs, is.Sign("sess-a", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "unmediated_call", ToolName: "Edit", ToolUseID: "toolu_1", IssuedAt: at}))
	rs = append(rs, is.End("sess-a"))
	l.Add(t, is.Leaves(rs...)...)
	v, err := c2sp.NewProofVerifier(k.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, is, v
}

func TestSessionPage(t *testing.T) {
	l, is, v := sessionLog(t)
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	body := get(t, srv.URL+"/session/1", 200)
	for _, want := range []string{
		"Chain intact and complete: sequences 1–8",
		// The time is in a column of its own.
		`<span class="headline">DENY · Read · secrets-by-name</span></td><td class="nowrap">2026-11-26 08:55:15Z</td>`,
		"ASK · WebFetch · ask-network",
		"DENY (NOT ENFORCED) · Write · no-writes",
		`<span class="tag observe">not enforced</span>`,
		"FINDING: UNMEDIATED CALL · Edit",
		`<tr class="deny">`, `<tr class="finding">`, `<tr class="exec">`,
		`href="/entry/1" class="decision-link"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("session page lacks %q:\n%s", want, body)
		}
	}
	// Chain order, and the session's receipts download as JSONL that
	// verifies as a chain.
	code, h, jsonl := fetch(t, srv.URL+"/session/1/receipts.jsonl")
	if code != 200 || !strings.Contains(h.Get("Content-Disposition"), "session-1.jsonl") {
		t.Fatalf("session download = %d %v", code, h)
	}
	lines := strings.Split(strings.TrimSpace(jsonl), "\n")
	if len(lines) != 8 {
		t.Fatalf("session download has %d lines, want 8", len(lines))
	}
	for i, line := range lines {
		if line != string(is.Sessions["sess-a"].All[i]) {
			t.Errorf("session download line %d = %s, want receipt %d as signed", i, line, i+1)
		}
	}
	home := get(t, srv.URL+"/", 200)
	for _, want := range []string{"1 tool call without a decision receipt", "1 decision not enforced"} {
		if !strings.Contains(home, want) {
			t.Errorf("home page findings lack %q", want)
		}
	}
}

func TestSearch(t *testing.T) {
	l, is, v := sessionLog(t)
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	denyHash := receipts.ChainHash(is.Sessions["sess-a"].All[3])
	for _, tt := range []struct {
		name, query string
		want        []int // entry indexes, newest first
	}{
		{"receipt hash", "q=" + denyHash, []int{3}},
		{"leaf index", "q=4", []int{4}},
		{"issuer", "issuer=" + is.KID, []int{7, 6, 5, 4, 3, 2, 1, 0}},
		{"session", "session=sess-a&kind=lifecycle", []int{7, 0}},
		{"tool", "tool=Bash", []int{2, 1}},
		{"decision deny", "decision=deny", []int{5, 3}},
		{"decision ask", "decision=ask", []int{4}},
		{"not enforced", "decision=not_enforced", []int{5}},
		{"executions", "kind=execution", []int{2}},
		{"unmediated", "kind=unmediated", []int{6}},
		{"time range inside", "from=2026-11-26T08:55&to=2026-11-26T08:56&tool=Read", []int{3}},
		{"time range outside", "from=2026-11-27&tool=Read", nil},
		{"nothing", "tool=Nope", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := get(t, srv.URL+"/search?"+tt.query, 200)
			var got []int
			for _, part := range strings.Split(body, `<td><a href="/entry/`)[1:] {
				var n int
				fmt.Sscanf(part, "%d", &n)
				got = append(got, n)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("search %s = entries %v, want %v", tt.query, got, tt.want)
			}
			code, _, jsonl := fetch(t, srv.URL+"/search.jsonl?"+tt.query)
			if n := len(strings.Fields(jsonl)); code != 200 || n != len(tt.want) {
				t.Errorf("search.jsonl %s = %d with %d lines, want 200 and %d", tt.query, code, n, len(tt.want))
			}
		})
	}
}

func TestDownloads(t *testing.T) {
	srv, e, l, _ := serve(t)
	code, h, leaf := fetch(t, srv.URL+"/entry/2/entry.json")
	if code != 200 || !strings.Contains(h.Get("Content-Disposition"), "entry-2.json") {
		t.Fatalf("entry download = %d %v", code, h)
	}
	code, _, tp := fetch(t, srv.URL+"/entry/2/proof.tlog-proof")
	cp, _ := l.Checkpoint(t)
	if code != 200 || !strings.HasSuffix(tp, string(cp)) || !strings.HasPrefix(tp, "c2sp.org/tlog-proof@v1\nindex 2\n") {
		t.Fatalf("proof download = %d %q", code, tp)
	}
	if vp, err := e.cfg.Verifier.Verify([]byte(strings.TrimSuffix(leaf, "\n")), []byte(tp)); err != nil || vp.Index != 2 {
		t.Errorf("the downloaded entry and proof: %+v, %v", vp, err)
	}
}

// countingFetcher counts the entry bundles read.
type countingFetcher struct {
	Fetcher
	bundles atomic.Int64
}

func (c *countingFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	c.bundles.Add(1)
	return c.Fetcher.ReadEntryBundle(ctx, i, p)
}

// TestRestartReadsOnlyWhatIsNew: an explorer restarted over its index
// reads no entry it has verified, only the new ones, and still shows the
// old; an index from another log is refused.
func TestRestartReadsOnlyWhatIsNew(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/restart")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	var rs [][]byte
	for i := range 600 {
		rs = append(rs, is.Start(fmt.Sprint("s", i)))
	}
	l.Add(t, is.Leaves(rs...)...)
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	index := filepath.Join(t.TempDir(), "explorer.db")
	verifyAndClose(t, l.Dir, v, index)

	l.Add(t, is.Leaf(is.Start("new")))
	cf := &countingFetcher{Fetcher: dirFetcher(t, l.Dir)}
	e, srv := newExplorer(t, cf, v, index)
	// Before the restarted explorer reads anything, it shows what it had.
	if body := get(t, srv.URL+"/entry/599", 200); !strings.Contains(body, "s599") {
		t.Errorf("restarted explorer's entry 599:\n%s", body)
	}
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// One bundle for the entry page, one for the new entry (bundle 2).
	if n := cf.bundles.Load(); n > 2 {
		t.Errorf("restarted explorer read %d entry bundles, want at most 2", n)
	}
	// It verified the one new entry and none of the 600 it had.
	if body := get(t, srv.URL+"/health", 200); !strings.Contains(body, `"verified":601`) || !strings.Contains(body, `"verified_since_start":1}`) {
		t.Errorf("health after restart = %s, want 601 verified, 1 of them since the start", body)
	}

	other := tlogtest.NewKeyPair(t, "example.com/other")
	ov, _ := c2sp.NewProofVerifier(other.VKey, nil)
	if _, err := New(t.Context(), Config{Fetcher: cf, Verifier: ov, Index: index}); err == nil {
		t.Errorf("New over another log's index: no error")
	}
}

// gatedLog serves a log directory over loopback HTTP; while closed, its
// entry bundle requests wait until it opens (or their client gives up).
type gatedLog struct {
	srv *httptest.Server
	// mu guards gate.
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

// TestPagesAnswerWhileTheLogHangs: from the first second, while the
// follower waits on a log that does not answer, every page answers from
// what is verified and says how far verification has got; clients giving
// up cancel nothing; the entries show once the log answers.
func TestPagesAnswerWhileTheLogHangs(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/gated")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s1"), is.End("s1"))...)
	g := newGatedLog(t, l.Dir)
	g.close()
	ops, err := logclient.NewHTTPOps(g.srv.URL, g.srv.Client(), "")
	if err != nil {
		t.Fatal(err)
	}
	f := newClient(t, ops)
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	e, srv := newExplorer(t, f, v, "")
	<-g.seen // the follower read the checkpoint and waits for the entries
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	codes := make(chan string, 100)
	for range 100 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			codes <- fmt.Sprint(resp.StatusCode, " ", strings.Contains(string(b), "0</span> of 2 entries verified so far"))
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != "200 true" {
			t.Fatalf("home page while the log hangs: %s, want 200 saying 0 of 2 verified", c)
		}
	}
	if body := get(t, srv.URL+"/entry/0", 503); !strings.Contains(body, "not verified yet") {
		t.Errorf("entry page before it is verified:\n%s", body)
	}
	if body := get(t, srv.URL+"/health", 200); !strings.Contains(body, `"catching_up"`) {
		t.Errorf("health while catching up = %s", body)
	}
	g.open()
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := g.cancelled.Load(); n != 0 {
		t.Fatalf("%d log requests were cancelled, want 0", n)
	}
	if body := get(t, srv.URL+"/", 200); !strings.Contains(body, "All <span id=\"verified-count\">2</span> entries") {
		t.Fatalf("home page once the log answers:\n%s", body)
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
	still := func(alter ...string) (string, *Explorer, *httptest.Server) {
		dir := filepath.Join(t.TempDir(), "log")
		if err := os.CopyFS(dir, os.DirFS(l.Dir)); err != nil {
			t.Fatal(err)
		}
		for _, name := range alter {
			os.Remove(filepath.Join(dir, name))
		}
		e, srv := newExplorer(t, dirFetcher(t, dir), v, "")
		e.Refresh(t.Context())
		return dir, e, srv
	}
	dir, e, srv := still()
	page := func(path string, want int, says string) {
		t.Helper()
		code, _, b := fetch(t, srv.URL+path)
		if code != want || !strings.Contains(b, says) {
			t.Errorf("GET %s = %d, want %d saying %q:\n%s", path, code, want, says, b)
		}
		if strings.Contains(b, dir) || strings.Contains(b, l.Dir) {
			t.Errorf("GET %s shows the storage path:\n%s", path, b)
		}
	}
	page("/", 200, "1 entry the log should have refused")
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
	for _, path := range []string{"/", "/entry/0", "/issuer/" + is.KID, "/search?tool=x", "/session/1"} {
		page(path, 502, "checkpoint does not verify")
	}
	for _, path := range []string{"/issuer/" + is.KID + "/index.json", "/entry/0/entry.json", "/session/1/receipts.jsonl", "/search.jsonl"} {
		if code, _, _ := fetch(t, srv.URL+path); code != 502 {
			t.Errorf("%s over a forged checkpoint = %d, want 502", path, code)
		}
	}
	if code, _, _ := fetch(t, srv.URL+"/health"); code != 503 {
		t.Errorf("health over a forged checkpoint = %d, want 503", code)
	}

	// A bundle gone from storage: the reason, not the path.
	l.Add(t, is.Leaf(is.Start("y")))
	dir, _, srv = still(filepath.Join("tile", "entries", "000.p", "3"))
	page("/", 502, "entries could not be read")
	page("/entry/0", 502, "could not be read")
}

// TestForkIsShown: a log that later signs another root for the size the
// explorer verified is shown as failing, never as the new view.
func TestForkIsShown(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/fork")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s1"), is.Start("s2"), is.Start("s3"))...)
	dir := filepath.Join(t.TempDir(), "log")
	if err := os.CopyFS(dir, os.DirFS(l.Dir)); err != nil {
		t.Fatal(err)
	}
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	e, srv := newExplorer(t, dirFetcher(t, dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The same key signs size 3 with another root.
	os.WriteFile(filepath.Join(dir, "checkpoint"), l.Sign(t, 3, make([]byte, 32)), 0o644)
	if err := e.Refresh(t.Context()); err == nil || !strings.Contains(err.Error(), "two roots") {
		t.Fatalf("Refresh over a forked checkpoint = %v, want two roots", err)
	}
	if body := get(t, srv.URL+"/", 502); !strings.Contains(body, "two roots for size 3") {
		t.Errorf("home page over a fork:\n%s", body)
	}
}

// TestLargeIssuerPage: an issuer with more entries than a page lists is
// paged; the summary counts all, gaps as runs; its index comes in pages
// that each verify, linked by their Link header.
func TestLargeIssuerPage(t *testing.T) {
	srv, e, l, is := serve(t)
	var rs [][]byte
	for i := range indexPage + 100 {
		if i == 10 {
			is.Seq += 1 << 40 // a run of 2^40 numbers missing
		}
		rs = append(rs, is.Start(fmt.Sprint("big", i)))
	}
	l.Add(t, is.Leaves(rs...)...)
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	page := get(t, srv.URL+"/issuer/"+is.KID, 200)
	if !strings.Contains(page, "issuer_sequence missing: 16-1099511627791") || strings.Count(page, `<td><a href="/entry/`) != pageRows || !strings.Contains(page, `id="older"`) {
		t.Fatalf("issuer page:\n%s", page)
	}
	// Walk the older pages to the first: every entry of the issuer once.
	seen := map[string]bool{}
	next := "/issuer/" + is.KID
	for pages := 0; next != ""; pages++ {
		body := get(t, srv.URL+next, 200)
		for _, part := range strings.Split(body, `<td><a href="/entry/`)[1:] {
			n, _, _ := strings.Cut(part, `"`)
			if seen[n] {
				t.Fatalf("entry %s listed twice", n)
			}
			seen[n] = true
		}
		next = ""
		if i := strings.Index(body, `" rel="next" id="older"`); i >= 0 {
			q := body[strings.LastIndex(body[:i], `href="`)+len(`href="`) : i]
			next = "/issuer/" + is.KID + strings.ReplaceAll(q, "&amp;", "&")
		}
	}
	if len(seen) != 5+indexPage+100 {
		t.Errorf("issuer pages list %d entries, want %d", len(seen), 5+indexPage+100)
	}
	code, h, first := fetch(t, srv.URL+"/issuer/"+is.KID+"/index.json")
	link := h.Get("Link")
	if code != 200 || !strings.Contains(link, `rel="next"`) {
		t.Fatalf("index.json = %d, Link %q", code, link)
	}
	s1, err := audit.VerifyIssuerIndex([]byte(first), l.Verifier)
	if err != nil || s1.Entries != indexPage {
		t.Fatalf("index page 1: %+v, %v", s1, err)
	}
	nextURL := strings.TrimSuffix(strings.TrimPrefix(strings.Split(link, ";")[0], "<"), ">")
	code, h, second := fetch(t, srv.URL+nextURL)
	s2, err := audit.VerifyIssuerIndex([]byte(second), l.Verifier)
	if code != 200 || err != nil || s2.Entries != 105 || h.Get("Link") != "" {
		t.Fatalf("index page 2 = %d: %+v, %v, Link %q", code, s2, err, h.Get("Link"))
	}
}

// TestEvidencePage: a finding's evidence given to the explorer is checked
// with the log key and its entries linked to their pages; evidence that
// does not verify is answered with 422, and input that is not evidence
// with 400.
func TestEvidencePage(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/evidence")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	bad := `{"not":"an entry"}`
	l.Add(t, is.Leaf(is.Start("s")), []byte(bad))
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	cur := e.view.Load()
	hashes, err := e.inclusion(t.Context(), 1, cur.cpInfo.Size)
	if err != nil {
		t.Fatal(err)
	}
	ev := audit.Evidence{Kind: audit.KindBadEntry, Checkpoint: string(cur.cp), Entries: []audit.EvidenceEntry{{Index: 1, Leaf: bad}}}
	for _, h := range hashes {
		ev.Entries[0].InclusionProof = append(ev.Entries[0].InclusionProof, base64.StdEncoding.EncodeToString(h))
	}
	good, _ := json.Marshal(ev)
	ev.Entries[0].Leaf = `{"not":"an entry!"}`
	altered, _ := json.Marshal(ev)
	for _, tt := range []struct {
		name, body string
		want       int
		says       []string
	}{
		{"evidence as written", string(good), 200, []string{`id="evidence-verdict"`, "Verified with the log key", `<a href="/entry/1">entry 1</a>`, "the same leaf"}},
		{"an altered leaf", string(altered), 422, []string{"does not prove it"}},
		{"not evidence", `{"kind":"bad_entry","extra":1}`, 400, []string{"evidence does not verify"}},
		{"nothing", "", 400, []string{"no evidence file"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("file", "evidence.json")
			fw.Write([]byte(tt.body))
			mw.Close()
			resp, err := http.Post(srv.URL+"/evidence", mw.FormDataContentType(), &form)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("POST /evidence = %d, want %d:\n%s", resp.StatusCode, tt.want, b)
			}
			for _, s := range tt.says {
				if !strings.Contains(string(b), s) {
					t.Errorf("POST /evidence lacks %q:\n%s", s, b)
				}
			}
		})
	}
	get(t, srv.URL+"/evidence", 200)
}

// TestSessionVerdict: a session's chain is judged in chain order whatever
// order its receipts were logged in (docket sync submits concurrently);
// a receipt missing, doubled or not linking breaks it, and says where.
func TestSessionVerdict(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/verdict")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	chain := func(sess string) [][]byte {
		rs := [][]byte{is.Start(sess)}
		d, x := is.Call(sess, "Bash")
		return append(rs, d, x, is.End(sess))
	}
	shuffled, gap, twice, other := chain("shuffled"), chain("gap"), chain("twice"), chain("unlinked")
	for _, r := range [][]byte{shuffled[2], shuffled[0], shuffled[3], shuffled[1], gap[0], gap[2], gap[3], twice[0], twice[1], twice[2], twice[3],
		other[0], other[1]} {
		l.Add(t, is.Leaf(r))
	}
	// A second, different receipt for sequence 2 of "twice".
	dup := is.Sessions["twice"]
	dup.Seq, dup.Head = 1, receipts.ChainHash(twice[0])
	l.Add(t, is.Leaf(is.Sign("twice", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Read", Decision: "deny"})))
	// "unlinked": sequence 3 whose previousReceiptHash is not sequence 2's.
	u := is.Sessions["unlinked"]
	u.Seq, u.Head = 2, "sha256:"+strings.Repeat("ab", 32)
	l.Add(t, is.Leaf(is.Sign("unlinked", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", Decision: "allow"})))
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, sid, want string
	}{
		{"logged out of order", "shuffled", "Chain intact and complete: sequences 1–4"},
		{"a receipt missing", "gap", "sequences 2–2 are not in the log (or not yet)"},
		{"two receipts for one sequence", "twice", "two receipts for sequence 2"},
		{"a link that does not hold", "unlinked", "previousReceiptHash of sequence 3 is not the hash of sequence 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var id int64
			if err := e.idx.db.QueryRow(`SELECT id FROM sessions WHERE sid = ?`, tt.sid).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if body := get(t, fmt.Sprintf("%s/session/%d", srv.URL, id), 200); !strings.Contains(body, tt.want) {
				t.Errorf("session %s page lacks %q:\n%s", tt.sid, tt.want, body)
			}
		})
	}
}

// TestChunkedCatchUp: a log read in many chunks, each committed once a
// consistency proof shows it a prefix of the signed tree, and read on
// after a restart from the stored compact range, ends at the signed root.
func TestChunkedCatchUp(t *testing.T) {
	chunk = 256
	t.Cleanup(func() { chunk = 16384 })
	k := tlogtest.NewKeyPair(t, "example.com/chunks")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	starts := func(n int) [][]byte {
		var rs [][]byte
		for range n {
			rs = append(rs, is.Leaf(is.Start(fmt.Sprint("s", is.Seq))))
		}
		return rs
	}
	l.Add(t, starts(1000)...)
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	index := filepath.Join(t.TempDir(), "explorer.db")
	verifyAndClose(t, l.Dir, v, index)
	l.Add(t, starts(700)...)
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, index)
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh after a restart, 700 more entries: %v", err)
	}
	if body := get(t, srv.URL+"/health", 200); !strings.Contains(body, `"verified":1700`) || !strings.Contains(body, `"ok"`) {
		t.Errorf("health = %s, want 1700 verified", body)
	}
	if body := get(t, srv.URL+"/issuer/"+is.KID, 200); !strings.Contains(body, "issuer_sequence 1–1700 all present") {
		t.Errorf("issuer page:\n%s", body)
	}
}

// verifyAndClose runs an explorer over the log in dir, with its index at
// index, until it has verified the log, and closes it.
func verifyAndClose(t *testing.T, dir string, v *c2sp.ProofVerifier, index string) {
	t.Helper()
	e, err := New(t.Context(), Config{Fetcher: dirFetcher(t, dir), Verifier: v, Refresh: time.Hour, Index: index})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatalf("the first explorer's Refresh: %v", err)
	}
}

// TestTimeRangeAcrossBundles: a time range finds exactly the entries
// issued in it, newest first, however their times are scattered across
// the log's entry bundles (the spans that bound the scan are per bundle).
func TestTimeRangeAcrossBundles(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/times")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	const n = 1000
	base := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i*7919%n) * time.Minute) } // a permutation of the minutes
	var leaves [][]byte
	for i := range n {
		leaves = append(leaves, is.Leaf(is.Sign(fmt.Sprint("s", i), receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionStart",
			LifecycleEvent: "session_start", IssuedAt: receipts.FormatTime(at(i))})))
	}
	l.Add(t, leaves...)
	v, _ := c2sp.NewProofVerifier(k.VKey, nil)
	index := filepath.Join(t.TempDir(), "explorer.db")
	verifyAndClose(t, l.Dir, v, index)
	// An index kept before spans were: they are rebuilt from its rows when
	// it is opened.
	x, err := openIndex(t.Context(), index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.db.Exec(`DELETE FROM spans; DELETE FROM meta WHERE k = 'spans'`); err != nil {
		t.Fatal(err)
	}
	x.db.Close()
	_, srv := newExplorer(t, dirFetcher(t, l.Dir), v, index)
	for _, tt := range []struct {
		name     string
		from, to time.Time // zero: open
	}{
		{"one minute", base.Add(500 * time.Minute), base.Add(501 * time.Minute)},
		{"an hour", base.Add(100 * time.Minute), base.Add(160 * time.Minute)},
		{"from only", base.Add(990 * time.Minute), time.Time{}},
		{"to only", time.Time{}, base.Add(3 * time.Minute)},
		{"before the log", base.Add(-time.Hour), base},
		{"after the log", base.Add(n * time.Minute), base.Add(2 * n * time.Minute)},
		{"everything", base, base.Add(n * time.Minute)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{}
			if !tt.from.IsZero() {
				q.Set("from", tt.from.Format(time.RFC3339))
			}
			if !tt.to.IsZero() {
				q.Set("to", tt.to.Format(time.RFC3339))
			}
			var want []string
			for i := range n {
				if (tt.from.IsZero() || !at(i).Before(tt.from)) && (tt.to.IsZero() || at(i).Before(tt.to)) {
					want = append(want, fmt.Sprint(`"session_id":"s`, i, `"`))
				}
			}
			code, _, jsonl := fetch(t, srv.URL+"/search.jsonl?"+q.Encode())
			var got []string
			for _, line := range strings.Fields(jsonl) {
				if _, rest, ok := strings.Cut(line, `"session_id":"`); ok {
					sid, _, _ := strings.Cut(rest, `"`)
					got = append(got, `"session_id":"`+sid+`"`)
				}
			}
			if code != 200 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("search.jsonl?%s = %d, %d entries %.200v, want %d %.200v", q.Encode(), code, len(got), got, len(want), want)
			}
			page := get(t, srv.URL+"/search?"+q.Encode(), 200)
			if rows := strings.Count(page, `<td><a href="/entry/`); rows != min(len(want), pageRows) {
				t.Errorf("search?%s lists %d entries, want %d", q.Encode(), rows, min(len(want), pageRows))
			}
		})
	}
}

// TestSessionDownloadPages: a session's receipts download in pages, in
// chain order, each page naming the next by its place in the chain, and
// the pages together are the chain as signed.
func TestSessionDownloadPages(t *testing.T) {
	jsonlPage = 3
	t.Cleanup(func() { jsonlPage = 10_000 })
	l, is, v := sessionLog(t)
	e, srv := newExplorer(t, dirFetcher(t, l.Dir), v, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []string
	next, pages := srv.URL+"/session/1/receipts.jsonl", 0
	for ; next != "" && pages < 10; pages++ {
		code, h, body := fetch(t, next)
		if code != 200 {
			t.Fatalf("GET %s = %d: %s", next, code, body)
		}
		got = append(got, strings.Fields(body)...)
		next = ""
		if link := h.Get("Link"); link != "" {
			path, _, _ := strings.Cut(strings.TrimPrefix(link, "<"), ">")
			next = srv.URL + path
		}
	}
	want := is.Sessions["sess-a"].All
	if pages != 3 || len(got) != len(want) {
		t.Fatalf("session download: %d pages, %d receipts; want 3 pages, %d receipts", pages, len(got), len(want))
	}
	for i := range want {
		if got[i] != string(want[i]) {
			t.Errorf("session download receipt %d = %s, want %s", i, got[i], want[i])
		}
	}
	if code, _, _ := fetch(t, srv.URL+"/session/1/receipts.jsonl?after=3"); code != 400 {
		t.Errorf("session download after=3 = %d, want 400 (after is SEQUENCE.ENTRY)", code)
	}
}

// TestSessionPaging: a session longer than a page is walked forward with
// next and back with previous, each page in chain order, the walk back
// giving the same pages as the walk forward; the first page has no
// previous and the last no next.
func TestSessionPaging(t *testing.T) {
	srv, e, l, is := serve(t)
	rs := [][]byte{is.Start("long")}
	for i := range sessionRows + 70 {
		d, x := is.Call("long", fmt.Sprint("Tool", i))
		rs = append(rs, d, x)
	}
	l.Add(t, is.Leaves(rs...)...)
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := e.idx.db.QueryRow(`SELECT id FROM sessions WHERE sid = 'long'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("%s/session/%d", srv.URL, id)
	link := func(body, id string) string {
		m := regexp.MustCompile(`<a href="([^"]*)" id="` + id + `"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return strings.ReplaceAll(m[1], "&amp;", "&")
	}
	seqs := func(body string) string {
		var out []string
		for _, m := range regexp.MustCompile(`<tr class="[a-z]*"><td>(\d+)</td>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, ",")
	}
	var forward []string
	var body string
	for q := "?"; q != ""; q = link(body, "older") {
		body = get(t, base+q, 200)
		if (link(body, "previous") == "") != (len(forward) == 0) {
			t.Errorf("page %d (%s): previous link %q", len(forward), q, link(body, "previous"))
		}
		forward = append(forward, seqs(body))
	}
	var all []string
	for i := range len(rs) {
		all = append(all, strconv.Itoa(i+1))
	}
	if want := (len(rs) + sessionRows - 1) / sessionRows; len(forward) != want {
		t.Fatalf("forward walk: %d pages, want %d", len(forward), want)
	}
	if got := strings.Join(forward, ","); got != strings.Join(all, ",") {
		t.Errorf("forward walk sequences = %s, want 1–%d in order", got, len(rs))
	}
	// Back from the last page to the first.
	for k := len(forward) - 2; k >= 0; k-- {
		q := link(body, "previous")
		if q == "" {
			t.Fatalf("page %d has no previous link", k+1)
		}
		body = get(t, base+q, 200)
		if got := seqs(body); got != forward[k] {
			t.Fatalf("walking back, page %d = %s, want %s", k, got, forward[k])
		}
		if next := link(body, "older"); next == "" {
			t.Errorf("page %d reached backwards has no next link", k)
		}
	}
	if q := link(body, "previous"); q != "" {
		t.Errorf("the first page reached backwards has a previous link %q", q)
	}
	for _, q := range []string{"?before=3", "?before=x.1", "?after=2"} {
		if code, _, _ := fetch(t, base+q); code != 400 {
			t.Errorf("GET session%s = %d, want 400", q, code)
		}
	}
}

// TestEarlierIndexMigrated: an index kept by the version before, with the
// index of whole receipt hashes, is given the index of their first 8
// bytes when opened, from its rows and without verifying an entry again;
// lookups by hash use it.
func TestEarlierIndexMigrated(t *testing.T) {
	l, is, v := sessionLog(t)
	index := filepath.Join(t.TempDir(), "explorer.db")
	verifyAndClose(t, l.Dir, v, index)
	x, err := openIndex(t.Context(), index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.db.Exec(`DROP INDEX entries_hash8; CREATE INDEX entries_hash ON entries (hash)`); err != nil {
		t.Fatal(err)
	}
	x.db.Close()
	// Before the follower migrates it, lookups by hash read the earlier
	// index.
	x, err = openIndex(t.Context(), index)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := parseRef(receipts.ChainHash(is.Sessions["sess-a"].All[1]))
	var n uint64
	if err := x.firstByHash(t.Context(), first, 100).Scan(&n); err != nil || n != 1 || !x.wholeHash {
		t.Errorf("before migrating: receipt 1 at entry %d, %v (whole-hash index %v), want 1", n, err, x.wholeHash)
	}
	if plan := queryPlan(t, x, first); !strings.Contains(plan, "entries_hash ") && !strings.Contains(plan, "entries_hash(") {
		t.Errorf("before migrating, a lookup by hash: plan %q, want the index entries_hash", plan)
	}
	x.db.Close()

	cf := &countingFetcher{Fetcher: dirFetcher(t, l.Dir)}
	e, srv := newExplorer(t, cf, v, index)
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := e.idx.db.Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'entries_hash%' ORDER BY name`)
	names, err := collect(rows, err, func(rows *sql.Rows, s *string) error { return rows.Scan(s) })
	if err != nil || strings.Join(names, ",") != "entries_hash8" {
		t.Errorf("indexes of the hash after opening = %v, %v; want entries_hash8 alone", names, err)
	}
	if body := get(t, srv.URL+"/health", 200); !strings.Contains(body, `"verified_since_start":0`) {
		t.Errorf("health after opening an earlier index = %s, want nothing verified again", body)
	}
	// Each receipt found by its hash: the search, and /receipt/HASH.
	for i, r := range is.Sessions["sess-a"].All {
		h := receipts.ChainHash(r)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(srv.URL + "/receipt/" + h)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.Header.Get("Location"), fmt.Sprintf("/entry/%d", i); resp.StatusCode != http.StatusSeeOther || got != want {
			t.Errorf("GET /receipt/%s = %d %q, want 303 %q", h, resp.StatusCode, got, want)
		}
		if body := get(t, srv.URL+"/search?q="+h, 200); !strings.Contains(body, fmt.Sprintf(`href="/entry/%d"`, i)) {
			t.Errorf("search for receipt %d's hash does not list it", i)
		}
	}
	h, _ := parseRef(receipts.ChainHash(is.Sessions["sess-a"].All[0]))
	plan := queryPlan(t, e.idx, h)
	if !strings.Contains(plan, "entries_hash8") {
		t.Errorf("a lookup by hash: plan %q, want the index entries_hash8", plan)
	}
}

// queryPlan is how SQLite finds the receipts of chain hash h in x.
func queryPlan(t *testing.T, x *index, h []byte) string {
	c, args := byHash(h)
	rows, err := x.db.Query("EXPLAIN QUERY PLAN SELECT e.idx FROM entries e WHERE "+c, args...)
	details, err := collect(rows, err, func(rows *sql.Rows, d *string) error {
		var id, parent, unused int
		return rows.Scan(&id, &parent, &unused, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(details, "; ")
}
