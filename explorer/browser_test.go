package explorer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrowser drives the explorer over a log of 10,000 entries in headless
// Chromium (playwright-core): navigation across pages, a search, an entry,
// a session page, charts, downloads, the CSP holding. It writes
// screenshots of the home, search, entry, session and issuer pages to the
// test's artefact directory (go test -artifacts -outputdir DIR keeps
// them). CI installs Chromium and playwright-core; elsewhere the test says
// what is missing and skips.
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
	// run a copy beside the modules, named for this run: another run of
	// the test (another checkout) may be using that directory at once.
	b, _ := os.ReadFile(script)
	cp, err := os.CreateTemp(filepath.Dir(modules), "docket-explorer-browser-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	copyPath := cp.Name()
	t.Cleanup(func() { os.Remove(copyPath) })
	if _, err := cp.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, 10_000, 4)
	e, srv := newExplorer(t, dirFetcher(t, f.Dir), f.Verifier, "")
	if err := e.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	shots := t.ArtifactDir()
	t.Logf("screenshots in %s", shots)
	cmd := exec.CommandContext(t.Context(), node, copyPath, srv.URL+"/", f.Issuers[0].KID, shots)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("browser checks failed: %v", err)
	}
	for _, want := range []string{"ok home size=10000", "ok witnesses rows=3 quorum=two-of-three: 2 of w0, w1, w2", "ok pages", "ok search hits=",
		"ok entry ", "ok session receipts=", "ok download session", "ok download proof", "ok download index entries=1000",
		"ok csp refused inline style and script", "ok missing entry"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("browser output lacks %q", want)
		}
	}
	for _, name := range []string{"home", "search", "entry", "session", "issuer"} {
		if fi, err := os.Stat(filepath.Join(shots, name+".png")); err != nil || fi.Size() < 10_000 {
			t.Errorf("screenshot %s: %v", name, err)
		}
	}
}
