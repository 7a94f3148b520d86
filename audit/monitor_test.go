package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// bundleFetcher counts the entry bundles read, and fails every read of a
// bundle from failFrom on, as a monitor killed there would stop.
type bundleFetcher struct {
	client.FileFetcher
	read     []uint64
	failFrom uint64
}

func (f *bundleFetcher) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	if f.failFrom != 0 && index >= f.failFrom {
		return nil, errors.New("killed")
	}
	f.read = append(f.read, index)
	return f.FileFetcher.ReadEntryBundle(ctx, index, p)
}

// TestMonitorResume: a catch-up commits its state part-way; a monitor
// stopped in the middle resumes from the part-way state, reads only the
// rest of the log, and reports, over both runs, what an uninterrupted run
// reports.
func TestMonitorResume(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/resume")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is, stranger := tlogtest.NewIssuer(t), tlogtest.NewIssuer(t)
	var leaves [][]byte
	for i := range 350 {
		s := fmt.Sprint("s", i)
		d, x := is.Call(s, "Bash")
		leaves = append(leaves, is.Leaves(is.Start(s), d, x, is.End(s))...)
		if i == 10 || i == 300 {
			leaves = append(leaves, stranger.Leaf(stranger.Start(s)))
		}
	}
	l.Add(t, leaves...) // 1402 entries: bundles 0 to 5
	every := func(c *MonitorConfig) { c.CommitEvery = 256; c.Keys = is.Keys() }

	whole, _ := newMonitor(t, &bundleFetcher{FileFetcher: client.FileFetcher{Root: l.Dir}}, k.VKey, t.TempDir(), every)
	all, err := whole.Poll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := messages(all)

	state := t.TempDir()
	killed := &bundleFetcher{FileFetcher: client.FileFetcher{Root: l.Dir}, failFrom: 3}
	m, _ := newMonitor(t, killed, k.VKey, state, every)
	first, err := m.Poll(t.Context())
	t.Logf("interrupted Poll: %v", err)
	if err == nil {
		t.Fatal("Poll through a failing fetcher succeeded")
	}
	if m.Read() != 768 {
		t.Fatalf("Read() after the failure = %d, want 768", m.Read())
	}
	rest := &bundleFetcher{FileFetcher: client.FileFetcher{Root: l.Dir}}
	m, _ = newMonitor(t, rest, k.VKey, state, every)
	if m.Read() != 768 || m.Size() != 1402 {
		t.Fatalf("restored Read(), Size() = %d, %d, want 768, 1402", m.Read(), m.Size())
	}
	second, err := m.Poll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if read := slices.Compact(slices.Sorted(slices.Values(rest.read))); !slices.Equal(read, []uint64{3, 4, 5}) {
		t.Errorf("bundles read on resume = %v, want [3 4 5]", rest.read)
	}
	if got := messages(append(first, second...)); !slices.Equal(got, want) {
		t.Errorf("alerts of the two runs = %q, want %q", got, want)
	}
	if len(want) != 2 {
		t.Errorf("uninterrupted alerts = %q, want two unknown_issuer", want)
	}
	if m.Read() != 1402 {
		t.Errorf("Read() after the catch-up = %d, want 1402", m.Read())
	}
}

func messages(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Kind+": "+f.Message)
	}
	return out
}
