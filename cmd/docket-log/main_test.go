package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/formats/proof"
	mproof "github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	tclient "github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/cli/clitest"
	"github.com/docketlog/docket/log/aws/s3test"
	"github.com/docketlog/docket/log/mysql/mysqltest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// The commands the tests run as processes: this test binary, which answers
// as each when started under its name from the $PATH that clitest.Main sets
// up (internal/cli/clitest). Under -race, they run with the race detector
// too, so the end-to-end tests check the servers for races.
const logBin, witnessBin, docketBin = "docket-log", "docket-witness", "docket"

// runFunc adapts a function to testscript's TestingM.
type runFunc func() int

func (f runFunc) Run() int { return f() }

// TestMain answers as the commands (clitest) and stops the MariaDB and S3
// servers that the MySQL and AWS tests share (mysqltest, s3test).
func TestMain(m *testing.M) {
	clitest.Main(runFunc(func() int {
		code := mysqltest.Main(m)
		s3test.Stop()
		return code
	}))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe for a process to write while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a server process started by a test.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// start runs bin with args and waits until GET url+ready answers 200.
func start(t *testing.T, bin, addr, ready string, args ...string) *proc {
	t.Helper()
	p := &proc{url: "http://" + addr, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	for {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", filepath.Base(bin), p.err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get(p.url + ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
	}
}

func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// stop sends SIGTERM and returns the exit error.
func (p *proc) stop() error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	return p.err
}

// testLog is a log key and storage directory.
type testLog struct {
	dir, key, vkey, addr string
	verifier             note.Verifier
}

func newTestLog(t *testing.T) *testLog {
	t.Helper()
	dir := t.TempDir()
	kf := filepath.Join(dir, "log.key")
	vkey, err := c2sp.GenerateKeyFile(kf, "example.com/docket-test")
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{dir: dir, key: kf, vkey: vkey, addr: freeAddr(t), verifier: v}
}

func (tl *testLog) start(t *testing.T, args ...string) *proc {
	t.Helper()
	args = append([]string{"-listen", tl.addr, "-key", tl.key, "-storage-dir", filepath.Join(tl.dir, "data")}, args...)
	return start(t, logBin, tl.addr, "/checkpoint", args...)
}

// issuer signs receipts for tests.
type issuer struct {
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

func newIssuer() *issuer {
	k, _ := receipts.GenerateKey()
	return &issuer{key: k, pub: k.Public().(ed25519.PublicKey)}
}

func (is *issuer) entry(t testing.TB, session string, seq int64) []byte {
	t.Helper()
	r, err := receipts.Sign(is.key, receipts.Payload{Type: "protectmcp:decision", SessionID: session, Sequence: seq,
		HookEvent: "PreToolUse", ToolName: "Bash", Decision: "allow", Reason: "cedar_allow"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := receipts.NewEntry(is.pub, r)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type response struct {
	status int
	body   []byte
	header http.Header
}

func post(t testing.TB, u string, body []byte, hdr ...string) (response, error) {
	req, err := http.NewRequest("POST", u+"/add", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, b, resp.Header}, err
}

func mustPost(t testing.TB, u string, body []byte, hdr ...string) response {
	t.Helper()
	r, err := post(t, u, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// postProved posts leaf to url() until the log answers with a proof,
// retrying while it is down or busy as docket sync does, and returns the
// verified proof; false after reporting any other answer as an error.
func postProved(t *testing.T, url func() string, leaf []byte, pv *c2sp.ProofVerifier) (*c2sp.VerifiedProof, bool) {
	for {
		r, err := post(t, url(), leaf)
		if err != nil || r.status == 503 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if r.status != 200 {
			t.Errorf("POST /add = %d %s", r.status, r.body)
			return nil, false
		}
		vp, err := pv.Verify(leaf, r.body)
		if err != nil {
			t.Errorf("Verify = %v", err)
			return nil, false
		}
		return vp, true
	}
}

func get(t *testing.T, u string, hdr ...string) response {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, b, resp.Header}
}

func parseProof(t testing.TB, b []byte) proof.TLogProof {
	t.Helper()
	var tp proof.TLogProof
	if err := tp.Unmarshal(b); err != nil {
		t.Fatalf("proof %q: %v", b, err)
	}
	return tp
}

func TestEndToEnd(t *testing.T) {
	tl := newTestLog(t)
	is, other := newIssuer(), newIssuer()
	jwks, _ := json.Marshal(map[string]any{"keys": []any{receipts.JWK(is.pub)}})
	issuers := filepath.Join(tl.dir, "issuers.json")
	tokens := filepath.Join(tl.dir, "tokens")
	os.WriteFile(issuers, jwks, 0o644)
	os.WriteFile(tokens, []byte("# writers\ns3cret\n"), 0o600)
	p := tl.start(t, "-issuers", issuers, "-tokens", tokens)
	auth := []string{"Authorization", "Bearer s3cret"}
	pv, err := c2sp.NewProofVerifier(tl.vkey, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Submit, and verify offline with only the log's vkey.
	var leaves [][]byte
	var firstCP []byte
	for i := range 5 {
		leaf := is.entry(t, "e2e", int64(i+1))
		r := mustPost(t, p.url, leaf, auth...)
		if r.status != 200 {
			t.Fatalf("POST /add = %d %s, want 200", r.status, r.body)
		}
		vp, err := pv.Verify(leaf, r.body)
		if err != nil {
			t.Fatalf("Verify(proof of entry %d) = %v", i, err)
		}
		if got := r.header.Get("Docket-Index"); got != strconv.FormatUint(vp.Index, 10) {
			t.Errorf("Docket-Index = %s, want %d", got, vp.Index)
		}
		if firstCP == nil {
			firstCP = vp.Checkpoint
		}
		leaves = append(leaves, leaf)
	}
	// A proof for another leaf does not verify.
	r := mustPost(t, p.url, leaves[0], auth...)
	if _, err := pv.Verify(leaves[1], r.body); err == nil {
		t.Errorf("Verify(leaf 1, proof of leaf 0) = nil, want an inclusion error")
	}

	t.Run("rejections", func(t *testing.T) {
		good := is.entry(t, "rej", 1)
		badSig := bytes.Replace(good, []byte(`"sequence":1`), []byte(`"sequence":9`), 1)
		var env map[string]any
		json.Unmarshal(good, &env)
		env["public_key"] = fmt.Sprintf("%x", other.pub)
		wrongKid, _ := json.Marshal(env)
		tests := []struct {
			name   string
			body   []byte
			hdr    []string
			status int
			code   string
		}{
			{"no token", good, nil, 401, "unauthorized"},
			{"wrong token", good, []string{"Authorization", "Bearer nope"}, 401, "unauthorized"},
			{"not json", []byte("hello"), auth, 400, "malformed_entry"},
			{"extra member", []byte(`{"public_key":"00","receipt":{},"x":1}`), auth, 400, "malformed_entry"},
			{"trailing data", append(append([]byte{}, good...), []byte(" {}")...), auth, 400, "malformed_entry"},
			{"too large", bytes.Repeat([]byte("a"), 70000), auth, 413, "entry_too_large"},
			{"bad signature", badSig, auth, 422, "bad_signature"},
			{"kid not the key's", wrongKid, auth, 422, "bad_signature"},
			{"issuer not allowed", other.entry(t, "rej", 1), auth, 403, "issuer_not_allowed"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := mustPost(t, p.url, tt.body, tt.hdr...)
				var e struct{ Error, Message string }
				json.Unmarshal(r.body, &e)
				if r.status != tt.status || e.Error != tt.code || e.Message == "" {
					t.Errorf("POST /add = %d %s, want %d with error %q and a message", r.status, r.body, tt.status, tt.code)
				}
			})
		}
	})

	t.Run("dedup concurrent", func(t *testing.T) {
		leaf := is.entry(t, "dup", 1)
		var wg sync.WaitGroup
		var mu sync.Mutex
		idx := map[string]int{}
		fresh := 0
		for range 16 {
			wg.Go(func() {
				r := mustPost(t, p.url, leaf, auth...)
				if r.status != 200 {
					t.Errorf("POST /add = %d %s", r.status, r.body)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				idx[r.header.Get("Docket-Index")]++
				if r.header.Get("Docket-Duplicate") == "false" {
					fresh++
				}
			})
		}
		wg.Wait()
		if len(idx) != 1 || fresh != 1 {
			t.Errorf("16 identical submissions: indices %v, %d fresh; want one index, one fresh", idx, fresh)
		}
	})

	t.Run("read API", func(t *testing.T) {
		tests := []struct {
			name, path, ctype, cache string
			status                   int
		}{
			{"checkpoint", "/checkpoint", "text/plain; charset=utf-8", "no-cache", 200},
			{"partial tile", "/tile/0/000.p/" + sizeOf(t, p.url), "application/octet-stream", "public, max-age=31536000, immutable", 200},
			{"partial entries", "/tile/entries/000.p/" + sizeOf(t, p.url), "application/octet-stream", "public, max-age=31536000, immutable", 200},
			{"missing tile", "/tile/0/001", "application/json", "", 404},
			{"non-canonical", "/tile/0/x000/000", "application/json", "", 404},
			{"traversal", "/tile/0/..%2F..%2F.docket-log%2Flog.key", "application/json", "", 404},
			{"health", "/health", "application/json", "no-store", 200},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := get(t, p.url+tt.path)
				if r.status != tt.status || r.header.Get("Content-Type") != tt.ctype || r.header.Get("Cache-Control") != tt.cache {
					t.Errorf("GET %s = %d %q %q, want %d %q %q", tt.path, r.status, r.header.Get("Content-Type"),
						r.header.Get("Cache-Control"), tt.status, tt.ctype, tt.cache)
				}
			})
		}
		r := get(t, p.url+"/tile/entries/000.p/"+sizeOf(t, p.url), "Accept-Encoding", "gzip")
		if r.header.Get("Content-Encoding") != "gzip" {
			t.Errorf("GET entries with Accept-Encoding gzip: Content-Encoding = %q, want gzip", r.header.Get("Content-Encoding"))
		}
	})

	t.Run("tessera client", func(t *testing.T) {
		ctx := t.Context()
		u, _ := url.Parse(p.url + "/")
		f, err := tclient.NewHTTPFetcher(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		cp, _, _, err := tclient.FetchCheckpoint(ctx, f.ReadCheckpoint, tl.verifier, tl.verifier.Name())
		if err != nil {
			t.Fatal(err)
		}
		// Docket's proof for leaf 2 against the latest checkpoint equals the one
		// Tessera's client builds from the tiles.
		r := mustPost(t, p.url, leaves[2], auth...)
		tp := parseProof(t, r.body)
		dcp, _, _, err := f_log.ParseCheckpoint(tp.Checkpoint, tl.verifier.Name(), tl.verifier)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := tclient.NewProofBuilder(ctx, dcp.Size, f.ReadTile)
		if err != nil {
			t.Fatal(err)
		}
		ip, err := pb.InclusionProof(ctx, tp.Index)
		if err != nil {
			t.Fatal(err)
		}
		if len(ip) != len(tp.Hashes) {
			t.Fatalf("Tessera inclusion proof has %d hashes, Docket's %d", len(ip), len(tp.Hashes))
		}
		for i := range ip {
			if !bytes.Equal(ip[i], tp.Hashes[i][:]) {
				t.Errorf("inclusion hash %d: Tessera %x, Docket %x", i, ip[i], tp.Hashes[i])
			}
		}
		// The entry bundle holds the leaf exactly as submitted.
		eb, err := tclient.GetEntryBundle(ctx, f.ReadEntryBundle, 0, cp.Size)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(eb.Entries[tp.Index], leaves[2]) {
			t.Errorf("entry %d = %s, want %s", tp.Index, eb.Entries[tp.Index], leaves[2])
		}
		// The first checkpoint a client saw is consistent with the latest.
		old, _, _, err := f_log.ParseCheckpoint(firstCP, tl.verifier.Name(), tl.verifier)
		if err != nil {
			t.Fatal(err)
		}
		checkConsistent(t, p.url, tl.verifier, old, cp)
	})

	// Graceful stop, restart: a resubmission gets its original index.
	if err := p.stop(); err != nil {
		t.Fatalf("SIGTERM: docket-log exited with %v\n%s", err, p.stderr.String())
	}
	first := parseProof(t, mustPost(t, tl.start(t, "-issuers", issuers, "-tokens", tokens).url, leaves[0], auth...).body)
	orig, _ := pv.Verify(leaves[0], r.body)
	if first.Index != orig.Index {
		t.Errorf("index after restart = %d, want %d", first.Index, orig.Index)
	}
}

// sizeOf returns the published tree size of the log at u (as a string).
func sizeOf(t *testing.T, u string) string {
	t.Helper()
	r := get(t, u+"/checkpoint")
	lines := strings.Split(string(r.body), "\n")
	if len(lines) < 2 {
		t.Fatalf("checkpoint %q", r.body)
	}
	return lines[1]
}

// checkConsistent verifies a consistency proof, built with Tessera's client
// from the log's tiles, between two checkpoints.
func checkConsistent(t *testing.T, u string, v note.Verifier, old, new *f_log.Checkpoint) {
	t.Helper()
	base, _ := url.Parse(u + "/")
	f, err := tclient.NewHTTPFetcher(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := tclient.NewProofBuilder(t.Context(), new.Size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := pb.ConsistencyProof(t.Context(), old.Size, new.Size)
	if err != nil {
		t.Fatal(err)
	}
	if err := mproof.VerifyConsistency(rfc6962.DefaultHasher, old.Size, new.Size, cp, old.Hash, new.Hash); err != nil {
		t.Errorf("consistency %d → %d: %v", old.Size, new.Size, err)
	}
}

// TestCrash kills the log with SIGKILL while clients submit, restarts it,
// and checks that every receipt ends up in the log exactly once, every
// proof verifies, and the log after the restart is consistent with the log
// before it.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a log under load")
	}
	tl := newTestLog(t)
	p := tl.start(t)
	var pMu sync.Mutex
	cur := func() string { pMu.Lock(); defer pMu.Unlock(); return p.url }
	pv, _ := c2sp.NewProofVerifier(tl.vkey, nil)
	is := newIssuer()
	const clients, perClient = 8, 60
	var (
		mu      sync.Mutex
		proved  int
		lastCP  []byte
		indices = map[uint64]int{}
		killed  = make(chan struct{})
	)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				leaf := is.entry(t, fmt.Sprintf("crash-%d", c), int64(i+1))
				vp, ok := postProved(t, cur, leaf, pv)
				if !ok {
					return
				}
				mu.Lock()
				indices[vp.Index]++
				proved++
				select {
				case <-killed:
				default:
					lastCP = vp.Checkpoint
					if proved == clients*perClient/3 {
						p.cmd.Process.Kill() // SIGKILL mid-load
						close(killed)
					}
				}
				mu.Unlock()
			}
		})
	}
	<-killed
	<-p.done
	mu.Lock()
	before := lastCP
	mu.Unlock()
	np := tl.start(t)
	pMu.Lock()
	p = np
	pMu.Unlock()
	wg.Wait()

	// Every receipt is in the log exactly once: the log holds exactly the
	// entries submitted, and each got a distinct index.
	cp, _, _, err := f_log.ParseCheckpoint(get(t, np.url+"/checkpoint").body, tl.verifier.Name(), tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Size != clients*perClient {
		t.Errorf("log size after crash and retries = %d, want %d", cp.Size, clients*perClient)
	}
	for i, n := range indices {
		if n != 1 {
			t.Errorf("index %d was returned for %d different receipts", i, n)
		}
	}
	old, _, _, err := f_log.ParseCheckpoint(before, tl.verifier.Name(), tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, np.url, tl.verifier, old, cp)
}

// TestSync runs docket sync against a log that is down, then up, with two
// syncs at once, then again with nothing pending.
func TestSync(t *testing.T) {
	tl := newTestLog(t)
	project := t.TempDir()
	st := store.Open(project)
	if err := st.WriteConfig(store.Config{LogURL: "http://" + tl.addr, LogKey: tl.vkey}); err != nil {
		t.Fatal(err)
	}
	priv, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(st.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	const n = 12
	for _, session := range []string{"sess-a", "sess-b"} {
		for range n / 2 {
			_, err := st.Append(session, store.AppendOptions{}, func(l store.Link) ([]byte, error) {
				return receipts.Sign(priv, receipts.Payload{Type: "protectmcp:decision", SessionID: session,
					Sequence: l.Sequence, PreviousReceiptHash: l.Previous, HookEvent: "PreToolUse",
					ToolName: "Read", Decision: "allow", Reason: "cedar_allow"})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	runSync := func() (int, string) {
		out, err := exec.Command(docketBin, "sync", "-dir", project, "-timeout", "2s").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	// Log down: nothing is lost, everything stays pending.
	if code, out := runSync(); code != 1 || !strings.Contains(out, fmt.Sprintf("%d receipts are still pending", n)) {
		t.Fatalf("docket sync with the log down = %d %s, want 1 and %d pending", code, out, n)
	}
	tl.start(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code, out := runSync(); code != 0 {
				t.Errorf("docket sync = %d %s, want 0", code, out)
			}
		})
	}
	wg.Wait()
	pv, _ := c2sp.NewProofVerifier(tl.vkey, nil)
	seen := map[uint64]bool{}
	for _, session := range []string{"sess-a", "sess-b"} {
		recs, _ := st.Receipts(session)
		for i, r := range recs {
			pf, err := st.ReadProof(session, int64(i+1))
			if err != nil {
				t.Fatalf("proof of %s/%d: %v", session, i+1, err)
			}
			vp, err := pv.VerifyReceipt(priv.Public().(ed25519.PublicKey), r, pf)
			if err != nil {
				t.Fatalf("VerifyReceipt(%s/%d) = %v", session, i+1, err)
			}
			if seen[vp.Index] {
				t.Errorf("index %d stored for two receipts", vp.Index)
			}
			seen[vp.Index] = true
		}
	}
	if code, out := runSync(); code != 0 || !strings.Contains(out, "nothing pending") {
		t.Errorf("docket sync with nothing pending = %d %s, want 0 nothing pending", code, out)
	}
}

// witnessProc starts a docket-witness for the log with vkey logVKey and
// returns it with its cosignature verifier key.
func startWitness(t *testing.T, dir, name, addr, logVKey string) (*proc, string) {
	t.Helper()
	kf := filepath.Join(dir, name+".key")
	if _, err := os.Stat(kf); err != nil {
		skey, _, err := note.GenerateKey(rand.Reader, name)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(kf, []byte(skey), 0o600)
		os.WriteFile(filepath.Join(dir, name+".logs"), []byte("log "+logVKey+"\nquorum none\n"), 0o644)
	}
	p := start(t, witnessBin, addr, "/health", "-listen", addr, "-key", kf, "-db", filepath.Join(dir, name+".db"),
		"-logs", filepath.Join(dir, name+".logs"))
	for line := range strings.Lines(p.stdout.String()) {
		if v, ok := strings.CutPrefix(line, "vkey "); ok {
			return p, strings.TrimSpace(v)
		}
	}
	t.Fatalf("docket-witness printed no vkey: %q", p.stdout.String())
	return nil, ""
}

// TestWitnessQuorum: a log with three witnesses and a 2-of-3 quorum keeps
// publishing with one witness down; with two down POST /add answers 503
// after a bounded wait; when one returns, publishing resumes and the
// pending receipt gets its proof, with the quorum's cosignatures.
func TestWitnessQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a log and three witnesses")
	}
	tl := newTestLog(t)
	wdir := t.TempDir()
	names := []string{"w1.example", "w2.example", "w3.example"}
	addrs := make([]string, 3)
	procs := make([]*proc, 3)
	var policy strings.Builder
	fmt.Fprintf(&policy, "log %s\n", tl.vkey)
	for i, name := range names {
		addrs[i] = freeAddr(t)
		var vkey string
		procs[i], vkey = startWitness(t, wdir, name, addrs[i], tl.vkey)
		fmt.Fprintf(&policy, "witness w%d %s http://%s\n", i+1, vkey, addrs[i])
	}
	policy.WriteString("group g 2 w1 w2 w3\nquorum g\n")
	pf := filepath.Join(tl.dir, "witnesses.policy")
	os.WriteFile(pf, []byte(policy.String()), 0o644)
	p := tl.start(t, "-witness-policy", pf, "-witness-timeout", "500ms", "-publish-timeout", "2s")
	pv, err := c2sp.NewProofVerifier(tl.vkey, []byte(policy.String()))
	if err != nil {
		t.Fatal(err)
	}
	is := newIssuer()
	submit := func(seq int64) (response, []byte) {
		leaf := is.entry(t, "wq", seq)
		return mustPost(t, p.url, leaf), leaf
	}

	r, leaf := submit(1)
	if _, err := pv.Verify(leaf, r.body); r.status != 200 || err != nil {
		t.Fatalf("all witnesses up: POST /add = %d %s, Verify = %v", r.status, r.body, err)
	}
	procs[2].stop()
	r, leaf = submit(2)
	if _, err := pv.Verify(leaf, r.body); r.status != 200 || err != nil {
		t.Fatalf("one witness down: POST /add = %d %s, Verify = %v; want a 2-of-3 proof", r.status, r.body, err)
	}
	procs[1].stop()
	r, leaf = submit(3)
	if r.status != 503 || r.header.Get("Retry-After") == "" || !bytes.Contains(r.body, []byte("not_published")) {
		t.Fatalf("two witnesses down: POST /add = %d %q %s, want 503 not_published with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	procs[1], _ = startWitness(t, wdir, names[1], addrs[1], tl.vkey)
	for {
		r = mustPost(t, p.url, leaf)
		if r.status == 200 {
			break
		}
		if r.status != 503 {
			t.Fatalf("witness back: POST /add = %d %s", r.status, r.body)
		}
	}
	if _, err := pv.Verify(leaf, r.body); err != nil {
		t.Fatalf("witness back: Verify(pending receipt) = %v", err)
	}
	if r.header.Get("Docket-Duplicate") != "true" {
		t.Errorf("the retried receipt was appended again; want its original index")
	}
}

// TestGracefulShutdown sends SIGTERM while submissions are in flight: the
// log exits 0, and every submission it answered with a proof is in the log
// it publishes after a restart.
func TestGracefulShutdown(t *testing.T) {
	tl := newTestLog(t)
	p := tl.start(t)
	pv, _ := c2sp.NewProofVerifier(tl.vkey, nil)
	is := newIssuer()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var proved []uint64
	started := make(chan struct{}, 64)
	for i := range 64 {
		wg.Go(func() {
			leaf := is.entry(t, "term", int64(i+1))
			started <- struct{}{}
			r, err := post(t, p.url, leaf)
			if err != nil || r.status != 200 {
				return // refused or cut off during shutdown: the client retries later
			}
			vp, err := pv.Verify(leaf, r.body)
			if err != nil {
				t.Errorf("Verify = %v", err)
				return
			}
			mu.Lock()
			proved = append(proved, vp.Index)
			mu.Unlock()
		})
	}
	for range 32 {
		<-started
	}
	if err := p.stop(); err != nil {
		t.Fatalf("SIGTERM with requests in flight: exit %v\n%s", err, p.stderr.String())
	}
	wg.Wait()
	np := tl.start(t)
	cp, _, _, err := f_log.ParseCheckpoint(get(t, np.url+"/checkpoint").body, tl.verifier.Name(), tl.verifier)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range proved {
		if i >= cp.Size {
			t.Errorf("entry %d was proved before shutdown but the log after restart has size %d", i, cp.Size)
		}
	}
}
