package docketcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/proof"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

var (
	syncSizes = flag.String("sync.n", "1000,10000,100000", "BenchmarkSync: receipts in the project, comma-separated")
	syncOld   = flag.String("sync.old", "", "BenchmarkSync: an earlier docket binary to time on the same projects")
	syncOldN  = flag.Int("sync.oldmax", 10000, "BenchmarkSync: the largest project -sync.old is timed on")
	syncImpls = flag.String("sync.impl", "new,inprocess,old", "BenchmarkSync: which implementations to time")
)

// BenchmarkSync times `docket sync` as the hooks start it, in projects of
// 10^3, 10^4 and 10^5 receipts (100 a session) that all have proofs from a
// real log: an RFC 6962 tree whose checkpoint is signed (internal/tlogtest),
// answering POST /add over loopback HTTP as docket-log does. The project is
// written as earlier versions left it (one proof file per receipt); a first
// sync moves the proofs into the journals and logs an issuer checkpoint.
//
//	go test -run '^$' -bench Sync -benchtime 20x ./internal/cli/docketcmd -args -sync.old=/path/to/earlier/docket
//
// Each iteration runs every case once, in turn, so that all see the same
// machine load (two cores shared with other work), and the medians are
// reported, in ms: n<receipts>-<case>-<impl>-ms. Cases: noop is a sync
// with nothing to do; one is a sync after a hook appended one receipt
// (appended untimed, then submitted, verified and stored). impl new runs
// the docket binary built from this tree, old the binary -sync.old names
// (up to -sync.oldmax receipts: it takes seconds per run beyond) on its own
// copy of the project, inprocess the command in this process (no process
// start). n<receipts>-<impl>-files is the number of files under .docket
// after the first sync, n<receipts>-first-<impl>-ms how long that first
// sync took (for new: reading every chain, moving the proof files into the
// journals). The timed runs pass -checkpoint-every 1h: the
// setup takes minutes, and an issuer checkpoint falling due among them
// would be a receipt to submit.
func BenchmarkSync(b *testing.B) {
	newBin := buildDocket(b)
	type run struct {
		name string
		p    *benchProject
		bin  string
		dir  string
		one  bool
		took []time.Duration
	}
	var runs []*run
	files := make(map[string]int)
	firsts := make(map[string]time.Duration)
	for _, f := range strings.Split(*syncSizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			b.Fatalf("-sync.n: %v", err)
		}
		p := newBenchProject(b, n)
		impls := []struct{ name, bin string }{{"new", newBin}, {"inprocess", ""}}
		if *syncOld != "" && n <= *syncOldN {
			impls = append(impls, struct{ name, bin string }{"old", *syncOld})
		}
		for _, impl := range impls {
			if !slices.Contains(strings.Split(*syncImpls, ","), impl.name) {
				continue
			}
			dir := p.copy(b)
			start := time.Now()
			p.sync(b, impl.bin, dir, "-timeout", "1h") // moves the proofs, logs an issuer checkpoint
			firsts[fmt.Sprintf("n%d-first-%s-ms", n, impl.name)] = time.Since(start)
			files[fmt.Sprintf("n%d-%s-files", n, impl.name)] = countFiles(b, filepath.Join(dir, store.DirName))
			for _, one := range []bool{false, true} {
				c := "noop"
				if one {
					c = "one"
				}
				runs = append(runs, &run{name: fmt.Sprintf("n%d-%s-%s-ms", n, c, impl.name), p: p, bin: impl.bin, dir: dir, one: one})
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, r := range runs {
			if r.one {
				r.p.appendOne(b, store.Open(r.dir))
			}
			start := time.Now()
			// Issuer checkpoints are due every 5 minutes: not within a run.
			out := r.p.sync(b, r.bin, r.dir, "-checkpoint-every", "1h")
			r.took = append(r.took, time.Since(start))
			if want := map[bool]string{false: "nothing pending", true: "stored 1 proof\n"}[r.one]; !strings.Contains(out, want) {
				b.Fatalf("%s: docket sync = %q, want %q", r.name, out, want)
			}
		}
	}
	for _, r := range runs {
		slices.Sort(r.took)
		b.ReportMetric(float64(r.took[len(r.took)/2].Microseconds())/1000, r.name)
	}
	for name, n := range files {
		b.ReportMetric(float64(n), name)
	}
	for name, d := range firsts {
		b.ReportMetric(float64(d.Milliseconds()), name)
	}
}

// buildDocket builds the docket binary of this tree, statically as the
// README installs it.
func buildDocket(b *testing.B) string {
	out := filepath.Join(b.TempDir(), "docket")
	cmd := exec.Command("go", "build", "-o", out, "github.com/docketlog/docket/cmd/docket")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building docket: %v\n%s", err, msg)
	}
	return out
}

// benchProject is a project in the layout of earlier versions, and the log
// its receipts are in.
type benchProject struct {
	dir  string
	key  ed25519.PrivateKey
	log  *benchLog
	home string
}

const benchSessionLen = 100

func newBenchProject(b *testing.B, n int) *benchProject {
	l := &benchLog{log: tlogtest.New("bench.example/log"), index: map[string]uint64{}}
	srv := httptest.NewServer(l)
	b.Cleanup(srv.Close)
	p := &benchProject{dir: filepath.Join(b.TempDir(), "project"), log: l, home: b.TempDir()}
	key, kf := receipts.GenerateKey()
	p.key = key
	st := store.Open(p.dir)
	if err := st.WriteKey(kf); err != nil {
		b.Fatal(err)
	}
	if err := st.WriteConfig(store.Config{LogURL: srv.URL, LogKey: l.log.VKey}); err != nil {
		b.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	type placed struct {
		session string
		seq     int64
		index   uint64
	}
	var all []placed
	for s := 0; s*benchSessionLen < n; s++ {
		session := fmt.Sprintf("session-%05d", s)
		var chain bytes.Buffer
		prev := ""
		for i := range min(benchSessionLen, n-s*benchSessionLen) {
			r := benchReceipt(b, key, session, int64(i+1), int64(s*benchSessionLen+i+1), prev)
			chain.Write(append(r, '\n'))
			prev = receipts.ChainHash(r)
			leaf, err := receipts.NewEntry(pub, r)
			if err != nil {
				b.Fatal(err)
			}
			all = append(all, placed{session, int64(i + 1), l.add(leaf)})
		}
		if err := os.MkdirAll(filepath.Dir(st.ChainPath(session)), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(st.ChainPath(session), chain.Bytes(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	// One checkpoint for all, as one sync of everything would get.
	size := l.log.Tree.Size()
	cp := tlogtest.SignCheckpoint(l.log.Origin, size, l.log.Tree.HashAt(size), l.log.Signer)
	for _, pl := range all {
		ip, err := l.log.Tree.InclusionProof(pl.index, size)
		if err != nil {
			b.Fatal(err)
		}
		tp := proof.TLogProof{Index: pl.index, Checkpoint: cp}
		for _, h := range ip {
			tp.Hashes = append(tp.Hashes, [32]byte(h))
		}
		path := filepath.Join(p.dir, store.DirName, store.ProofsDir, pl.session, strconv.FormatInt(pl.seq, 10)+store.ProofExt)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, tp.Marshal(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

func benchReceipt(b *testing.B, key ed25519.PrivateKey, session string, seq, issuerSeq int64, prev string) []byte {
	r, err := receipts.Sign(key, receipts.Payload{
		Type: receipts.TypeDecision, SessionID: session, Sequence: seq, PreviousReceiptHash: prev, IssuerSequence: issuerSeq,
		HookEvent: "PreToolUse", Agent: "claude-code", ToolName: "Bash", Decision: receipts.Allow, Reason: "cedar_allow",
		ToolInputHash: "sha256:" + strings.Repeat("ab", 32), PolicyDigest: "sha256:" + strings.Repeat("cd", 32),
		PolicyIDs: []string{"allow-git"}, IssuedAt: receipts.FormatTime(time.Unix(1_790_000_000+issuerSeq, 0)),
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// appendOne appends one receipt to a session of the project, as a hook does.
func (p *benchProject) appendOne(b *testing.B, st *store.Store) {
	_, err := st.Append("session-00000", store.AppendOptions{}, func(l store.Link) ([]byte, error) {
		return benchReceipt(b, p.key, "session-00000", l.Sequence, l.IssuerSequence, l.Previous), nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// copy copies the project for one implementation to change.
func (p *benchProject) copy(b *testing.B) string {
	dst := filepath.Join(b.TempDir(), "project")
	if out, err := exec.Command("cp", "-R", p.dir, dst).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

// sync runs docket sync in dir, with bin or in this process, and returns
// its stdout.
func (p *benchProject) sync(b *testing.B, bin, dir string, flags ...string) string {
	var out, errw bytes.Buffer
	code := 0
	args := append([]string{"sync", "-dir", dir}, flags...)
	if bin == "" {
		code = Run(context.Background(), args, nil, &out, &errw)
	} else {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HOME="+p.home, "XDG_STATE_HOME=")
		cmd.Stdout, cmd.Stderr = &out, &errw
		if err := cmd.Run(); err != nil {
			code = cmd.ProcessState.ExitCode()
		}
	}
	if code != 0 {
		b.Fatalf("docket sync -dir %s = %d: %s %s", dir, code, out.String(), errw.String())
	}
	return out.String()
}

func countFiles(b *testing.B, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchLog answers POST /add from a tlogtest.Log with strict dedup.
type benchLog struct {
	mu    sync.Mutex // guards log and index
	log   *tlogtest.Log
	index map[string]uint64
}

func (l *benchLog) add(leaf []byte) uint64 {
	idx, ok := l.index[string(leaf)]
	if !ok {
		idx = l.log.Tree.Size()
		l.index[string(leaf)] = idx
		l.log.Tree.AppendData(leaf)
	}
	return idx
}

func (l *benchLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/add" {
		http.Error(w, `{"error":"malformed_entry"}`, http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	w.Write(l.log.Proof(l.add(body)))
}
