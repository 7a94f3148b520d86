package explorer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
