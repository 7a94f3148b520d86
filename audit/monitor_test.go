package audit

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// switchFetcher reads from whichever log directory Root names now, as a
// client whose log starts serving another tree would.
type switchFetcher struct{ client.FileFetcher }

func newMonitor(t *testing.T, f Fetcher, vkey string, state string, mod func(*MonitorConfig)) (*Monitor, *bytes.Buffer) {
	t.Helper()
	v, err := c2sp.NewProofVerifier(vkey, nil)
	if err != nil {
		t.Fatal(err)
	}
	var alerts bytes.Buffer
	cfg := MonitorConfig{Fetcher: f, Verifier: v, StateDir: state, Alerts: &alerts}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewMonitor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, &alerts
}

func poll(t *testing.T, m *Monitor) []string {
	t.Helper()
	fs, err := m.Poll(t.Context())
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	checkEvidence(t, fs, m.cfg.Verifier.LogKey())
	return kinds(fs)
}

func TestMonitorHonestThenEquivocation(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/monitored")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	l.Add(t, is.Leaves(is.Start("s1"))...)
	state := t.TempDir()
	m, _ := newMonitor(t, client.FileFetcher{Root: l.Dir}, k.VKey, state, nil)
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("first poll alerts %v", got)
	}
	d, x := is.Call("s1", "Bash")
	l.Add(t, is.Leaves(d, x, is.End("s1"), is.Checkpoint())...)
	// A new monitor from the same state continues where the first stopped.
	m, _ = newMonitor(t, client.FileFetcher{Root: l.Dir}, k.VKey, state, nil)
	if m.Size() != 1 {
		t.Fatalf("restored size %d, want 1", m.Size())
	}
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("honest growth alerts %v", got)
	}
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("unchanged log alerts %v", got)
	}

	// The issuer signs a second receipt for s1's sequence 2, and skips
	// issuer sequence numbers before checkpointing.
	other, err := receipts.Sign(is.Key, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash",
		ToolInputHash: "sha256:other", Decision: receipts.Allow, SessionID: "s1", Sequence: 2,
		PreviousReceiptHash: receipts.ChainHash(is.Sessions["s1"].All[0]), IssuerSequence: 2})
	if err != nil {
		t.Fatal(err)
	}
	is.Seq += 3 // three receipts never logged
	l.Add(t, is.Leaf(other), is.Leaf(is.Checkpoint()))
	got := poll(t, m)
	if want := []string{KindEquivocation, KindIssuerSequenceGap}; !slices.Equal(got, want) {
		t.Fatalf("alerts %v, want %v", got, want)
	}
}

func TestMonitorFork(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/forked")
	a := tlogtest.NewPOSIX(t, t.TempDir(), k)
	b := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	var common [][]byte
	for range 2 {
		d, x := is.Call("s", "Bash")
		common = append(common, is.Leaf(d), is.Leaf(x))
	}
	a.Add(t, common...)
	b.Add(t, common[:3]...)
	b.Add(t, is.Leaf(is.Start("other")), common[3], is.Leaf(is.Start("more")))
	f := &switchFetcher{client.FileFetcher{Root: a.Dir}}
	m, alerts := newMonitor(t, f, k.VKey, t.TempDir(), nil)
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("first poll alerts %v", got)
	}
	f.Root = b.Dir // the log now shows another history
	if got := poll(t, m); !slices.Equal(got, []string{KindFork}) {
		t.Fatalf("alerts %v, want fork", got)
	}
	if !bytes.Contains(alerts.Bytes(), []byte(`"kind":"fork"`)) {
		t.Fatalf("no fork alert line in %s", alerts)
	}
	if m.Size() != 4 {
		t.Fatalf("state moved to %d after a fork, want it kept at 4", m.Size())
	}
}

func TestMonitorWitnessSplitView(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/split")
	a := tlogtest.NewPOSIX(t, t.TempDir(), k)
	b := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	a.Add(t, is.Leaves(is.Start("s1"), is.Start("s2"), is.Start("s3"))...)
	b.Add(t, is.Leaves(is.Start("s1"), is.Start("x"))...)
	bRaw, _ := b.Checkpoint(t)
	_, aCP := a.Checkpoint(t)
	// A witness that was shown b's view serves it as its latest checkpoint.
	w := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+c2sp.LogID(aCP.Origin)+"/checkpoint" {
			http.NotFound(w, r)
			return
		}
		w.Write(bRaw)
	}))
	t.Cleanup(w.Close)
	m, _ := newMonitor(t, client.FileFetcher{Root: a.Dir}, k.VKey, t.TempDir(), func(c *MonitorConfig) { c.Witnesses = []string{w.URL} })
	if got := poll(t, m); !slices.Equal(got, []string{KindWitnessSplitView}) {
		t.Fatalf("alerts %v, want witness_split_view", got)
	}
}

func TestMonitorUnknownIssuer(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/issuers")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	known, stranger := tlogtest.NewIssuer(t), tlogtest.NewIssuer(t)
	l.Add(t, known.Leaf(known.Start("a")), stranger.Leaf(stranger.Start("b")))
	m, _ := newMonitor(t, client.FileFetcher{Root: l.Dir}, k.VKey, t.TempDir(), func(c *MonitorConfig) { c.Keys = known.Keys() })
	if got := poll(t, m); !slices.Equal(got, []string{KindUnknownIssuer}) {
		t.Fatalf("alerts %v, want unknown_issuer", got)
	}
}

// TestMonitorOutOfOrder: docket sync submits in parallel, so receipts of
// one session reach the log out of order; that is no equivocation.
func TestMonitorOutOfOrder(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/unordered")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	st := is.Start("s")
	d, x := is.Call("s", "Bash")
	end := is.End("s")
	m, _ := newMonitor(t, client.FileFetcher{Root: l.Dir}, k.VKey, t.TempDir(), nil)
	l.Add(t, is.Leaves(st, x)...)
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("alerts %v", got)
	}
	l.Add(t, is.Leaves(end, d, is.Checkpoint())...)
	if got := poll(t, m); len(got) != 0 {
		t.Fatalf("alerts %v after the late receipts arrived", got)
	}
}

// TestMonitorExec: -exec runs a command per alert with the alert's kind and
// its evidence file in the environment.
func TestMonitorExec(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/exec")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	known, stranger := tlogtest.NewIssuer(t), tlogtest.NewIssuer(t)
	l.Add(t, known.Leaf(known.Start("a")), stranger.Leaf(stranger.Start("b")))
	out := filepath.Join(t.TempDir(), "alerts")
	m, _ := newMonitor(t, client.FileFetcher{Root: l.Dir}, k.VKey, t.TempDir(), func(c *MonitorConfig) {
		c.Keys = known.Keys()
		c.Exec = `printf '%s %s\n' "$DOCKET_ALERT_KIND" "$DOCKET_EVIDENCE" >> ` + out
	})
	poll(t, m)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kind, file, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	if kind != KindUnknownIssuer || file == "" {
		t.Fatalf("the alert command saw %q, want the kind and an evidence file", b)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("evidence file named to the command: %v", err)
	}
}
