package log

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log/aws"
	"github.com/docketlog/docket/log/aws/s3test"
	//lint:ignore SA1019 the log suite runs on -storage mysql while it exists
	"github.com/docketlog/docket/log/mysql"
	"github.com/docketlog/docket/log/mysql/mysqltest"
	"github.com/docketlog/docket/log/posix"
	"github.com/docketlog/docket/receipts"
	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/formats/proof"
	mproof "github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// testEntry returns a valid log entry for receipt number seq of session.
func testEntry(t testing.TB, key ed25519.PrivateKey, session string, seq int64) []byte {
	t.Helper()
	r, err := receipts.Sign(key, receipts.Payload{Type: "protectmcp:decision", SessionID: session, Sequence: seq,
		HookEvent: "PreToolUse", ToolName: "Bash", Decision: "allow", Reason: "cedar_allow",
		IssuedAt: "2026-11-21T12:34:56.123Z"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := receipts.NewEntry(key.Public().(ed25519.PublicKey), r)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// testLog is a Log over the storage of a test directory (see backends);
// Close closes both, so that a test can open the storage again.
type testLog struct {
	*Log
	st io.Closer
}

func (l *testLog) Close(ctx context.Context) error {
	err := l.Log.Close(ctx)
	return errors.Join(err, l.st.Close())
}

func newTestLogB(b *testing.B) (*testLog, note.Verifier) {
	return newTestLog(b, b.TempDir(), func(c *Config) { c.MaxInFlight = 1 << 20 })
}

// mysqlDSNFile, in a test directory, names the MySQL database that holds
// the test's log; without it the log is on POSIX storage in the directory.
const mysqlDSNFile = "mysql.dsn"

// awsBucketFile, in a test directory beside mysqlDSNFile, holds the
// endpoint and the name of the S3 bucket that, with the database, holds
// the test's log on the AWS storage.
const awsBucketFile = "aws.bucket"

// backends runs f once for each storage backend, with a new test
// directory set up for it: POSIX, MySQL on a fresh database of the test
// server (skipped where mariadbd is not installed), and AWS on a fresh
// database and a fresh bucket of the test S3 server (skipped where
// either is not installed).
func backends(t *testing.T, f func(t *testing.T, dir string)) {
	t.Run("posix", func(t *testing.T) { f(t, t.TempDir()) })
	t.Run("mysql", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, mysqlDSNFile), []byte(mysqltest.Database(t)), 0o600); err != nil {
			t.Fatal(err)
		}
		f(t, dir)
	})
	t.Run("aws", func(t *testing.T) {
		dir := t.TempDir()
		b := s3test.NewBucket(t)
		if err := os.WriteFile(filepath.Join(dir, mysqlDSNFile), []byte(mysqltest.Database(t)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, awsBucketFile), []byte(b.Endpoint+"\n"+b.Name), 0o600); err != nil {
			t.Fatal(err)
		}
		f(t, dir)
	})
}

// openStorage opens the storage of a test directory.
func openStorage(t testing.TB, dir string) (tessera.Driver, Index, io.Closer) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, awsBucketFile)); err == nil {
		endpoint, bucket, _ := strings.Cut(string(b), "\n")
		dsn, err := os.ReadFile(filepath.Join(dir, mysqlDSNFile))
		if err != nil {
			t.Fatal(err)
		}
		sdk := s3test.Config()
		st, err := aws.Open(t.Context(), aws.Options{DSN: string(dsn), Bucket: bucket, Endpoint: endpoint,
			SDKConfig: &sdk, StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return st.Driver, st.Index, st
	}
	if dsn, err := os.ReadFile(filepath.Join(dir, mysqlDSNFile)); err == nil {
		st, err := mysql.Open(t.Context(), string(dsn), mysql.Options{StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return st.Driver, st.Index, st
	}
	st, err := posix.Open(t.Context(), filepath.Join(dir, "storage"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st.Driver, st.Index, st
}

func newTestLog(t testing.TB, dir string, mod func(*Config)) (*testLog, note.Verifier) {
	t.Helper()
	kf := filepath.Join(dir, "log.key")
	_, err := c2sp.GenerateKeyFile(kf, "example.com/test-log")
	if err != nil && !strings.Contains(err.Error(), "exists") {
		t.Fatal(err)
	}
	s, vkey, err := c2sp.LoadSigner(kf)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	driver, index, st := openStorage(t, dir)
	cfg := Config{Driver: driver, Index: index, Signer: s, VKey: vkey}
	if _, ok := index.(*mysql.Index); ok { // the MySQL or the AWS storage
		cfg.CheckpointInterval = max(mysql.MinCheckpointInterval, aws.MinCheckpointInterval)
	} else {
		cfg.PaceBatches = true // as docket-log runs the POSIX storage
	}
	if mod != nil {
		mod(&cfg)
	}
	l, err := New(t.Context(), cfg)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return &testLog{l, st}, v
}

// checkProof verifies a tlog-proof for leaf against the log key.
func checkProof(t *testing.T, v note.Verifier, leaf, p []byte) uint64 {
	t.Helper()
	var tp proof.TLogProof
	if err := tp.Unmarshal(p); err != nil {
		t.Errorf("proof: %v", err)
		return 0
	}
	cp, _, _, err := f_log.ParseCheckpoint(tp.Checkpoint, v.Name(), v)
	if err != nil {
		t.Errorf("checkpoint: %v", err)
		return 0
	}
	hashes := make([][]byte, len(tp.Hashes))
	for i := range tp.Hashes {
		hashes[i] = tp.Hashes[i][:]
	}
	if err := mproof.VerifyInclusion(rfc6962.DefaultHasher, tp.Index, cp.Size, rfc6962.DefaultHasher.HashLeaf(leaf), hashes, cp.Hash); err != nil {
		t.Errorf("inclusion of %d in %d: %v", tp.Index, cp.Size, err)
	}
	return tp.Index
}

func TestAddDedup(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, v := newTestLog(t, dir, nil)
		priv, _ := receipts.GenerateKey()

		// Concurrent identical submissions share one index.
		leaf := testEntry(t, priv, "s1", 1)
		var wg sync.WaitGroup
		idx := make([]uint64, 8)
		for i := range idx {
			wg.Go(func() {
				r, err := l.Add(t.Context(), leaf)
				if err != nil {
					t.Errorf("Add = %v", err)
					return
				}
				idx[i] = checkProof(t, v, leaf, r.Proof)
			})
		}
		wg.Wait()
		for i := range idx {
			if idx[i] != idx[0] {
				t.Fatalf("concurrent Add indices = %v, want all equal", idx)
			}
		}
		// The same entry in another JSON form (member order, whitespace) is the
		// same leaf.
		e, err := receipts.ParseEntry(leaf)
		if err != nil {
			t.Fatal(err)
		}
		other := fmt.Appendf(nil, "{ \"receipt\" : %s ,\n \"public_key\": \"%x\" }", e.Receipt, e.PublicKey)
		if r, err := l.Add(t.Context(), other); err != nil || r.Index != idx[0] || !r.Dup {
			t.Fatalf("Add(reordered entry) = %+v, %v; want index %d, dup", r, err, idx[0])
		}
		// Distinct entries get distinct indices.
		var leaves [][]byte
		for s := range 20 {
			leaves = append(leaves, testEntry(t, priv, "s2", int64(s+1)))
		}
		seen := map[uint64]bool{idx[0]: true}
		var mu sync.Mutex
		for _, lf := range leaves {
			wg.Go(func() {
				r, err := l.Add(t.Context(), lf)
				if err != nil {
					t.Error(err)
					return
				}
				checkProof(t, v, lf, r.Proof)
				mu.Lock()
				defer mu.Unlock()
				if seen[r.Index] {
					t.Errorf("Add(new) = index %d again", r.Index)
				}
				seen[r.Index] = true
			})
		}
		wg.Wait()
		if err := l.Close(t.Context()); err != nil {
			t.Fatal(err)
		}

		// After a restart, resubmissions get their original index.
		l, v = newTestLog(t, dir, nil)
		defer l.Close(context.Background())
		r, err := l.Add(t.Context(), leaf)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkProof(t, v, leaf, r.Proof); got != idx[0] || !r.Dup {
			t.Errorf("Add(after restart) = %d dup %v, want %d dup true", got, r.Dup, idx[0])
		}
		if n := l.coveredN.Load(); n != 21 {
			t.Errorf("indexed = %d, want 21", n)
		}
	})
}

func TestIndexRebuild(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, nil)
		priv, _ := receipts.GenerateKey()
		var leaves [][]byte
		for s := range 300 { // more than one entry bundle
			leaves = append(leaves, testEntry(t, priv, "s", int64(s+1)))
		}
		want := map[string]uint64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, lf := range leaves {
			wg.Go(func() {
				r, err := l.Add(t.Context(), lf)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[string(lf)] = r.Index
				mu.Unlock()
			})
		}
		wg.Wait()
		l.Close(t.Context())
		// Lose the index: it is rebuilt from the log on start.
		loseIndex(t, dir)
		l, v := newTestLog(t, dir, nil)
		defer l.Close(context.Background())
		if n := l.coveredN.Load(); n != 300 {
			t.Fatalf("indexed after rebuild = %d, want 300", n)
		}
		for _, lf := range leaves[:20] {
			r, err := l.Add(t.Context(), lf)
			if err != nil {
				t.Fatal(err)
			}
			if got := checkProof(t, v, lf, r.Proof); got != want[string(lf)] || !r.Dup {
				t.Errorf("Add(after rebuild) = %d dup %v, want %d dup true", got, r.Dup, want[string(lf)])
			}
		}
	})
}

func TestStatus(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		priv, _ := receipts.GenerateKey()
		other, _ := receipts.GenerateKey()
		l, _ := newTestLog(t, dir, func(c *Config) {
			c.Tokens = []string{"sekrit"}
			c.Issuers = receipts.PinnedKey(priv.Public().(ed25519.PublicKey))
		})
		defer l.Close(context.Background())
		srv := httptest.NewServer(l.Handler())
		defer srv.Close()

		good := testEntry(t, priv, "s", 1)
		bad := bytes.Replace(good, []byte(`"sequence":1`), []byte(`"sequence":2`), 1)
		tests := []struct {
			name   string
			token  string
			body   []byte
			status int
			code   string
		}{
			{"ok", "sekrit", good, 200, ""},
			{"no token", "", good, 401, codeUnauthorized},
			{"bad token", "nope", good, 401, codeUnauthorized},
			{"malformed", "sekrit", []byte(`{"public_key":"00"`), 400, codeMalformed},
			{"duplicate member", "sekrit", []byte(`{"public_key":"a","public_key":"b"}`), 400, codeMalformed},
			{"too large", "sekrit", bytes.Repeat([]byte(" "), receipts.MaxEntrySize+1), 413, codeTooLarge},
			{"bad signature", "sekrit", bad, 422, codeSignature},
			{"member in signature", "sekrit", bytes.Replace(good, []byte(`"signature":{`), []byte(`"signature":{"x":1,`), 1), 400, codeMalformed},
			{"jwk in signature", "sekrit", bytes.Replace(good, []byte(`"signature":{`),
				fmt.Appendf(nil, `"signature":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"%x"},`, other.Public()), 1), 400, codeMalformed},
			{"issuer not allowed", "sekrit", testEntry(t, other, "s", 1), 403, codeForbidden},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, _ := http.NewRequest("POST", srv.URL+"/add", bytes.NewReader(tt.body))
				if tt.token != "" {
					req.Header.Set("Authorization", "Bearer "+tt.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var buf bytes.Buffer
				buf.ReadFrom(resp.Body)
				if resp.StatusCode != tt.status {
					t.Fatalf("POST /add = %d %s, want %d", resp.StatusCode, buf.String(), tt.status)
				}
				if tt.code != "" && !strings.Contains(buf.String(), fmt.Sprintf(`"error":%q`, tt.code)) {
					t.Errorf("POST /add body = %s, want error %q", buf.String(), tt.code)
				}
			})
		}
	})
}

func TestOverloaded(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, func(c *Config) { c.MaxInFlight = 1 })
		defer l.Close(context.Background())
		l.inflight <- struct{}{} // one request in flight
		_, err := l.Add(t.Context(), []byte(`{}`))
		if !errors.Is(err, ErrOverloaded) {
			t.Fatalf("Add(while full) = %v, want ErrOverloaded", err)
		}
		if s, _, ra := statusOf(err); s != 503 || ra == 0 {
			t.Errorf("statusOf(ErrOverloaded) = %d retry %d, want 503 with Retry-After", s, ra)
		}
		<-l.inflight
	})
}

func TestHealthStale(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, _ := newTestLog(t, dir, func(c *Config) { c.MaxCheckpointAge = time.Nanosecond })
		defer l.Close(context.Background())
		if _, err := l.Health(t.Context()); !errors.Is(err, errStale) {
			t.Errorf("Health() with a 1ns age limit = %v, want stale", err)
		}
	})
}

// TestHealthProbe checks that Health reports ErrNotWritable while the
// storage's probe fails, and a failed batch until a probe succeeds after
// it (a writer that /health keeps idle writes no batch that could end it).
func TestHealthProbe(t *testing.T) {
	var probeErr atomic.Pointer[error]
	probe := func(context.Context) error {
		if p := probeErr.Load(); p != nil {
			return *p
		}
		return nil
	}
	full := errors.New("no space left on device")
	l, _ := newTestLog(t, t.TempDir(), func(c *Config) { c.Probe = probe })
	defer l.Close(context.Background())
	if _, err := l.Health(t.Context()); err != nil {
		t.Fatalf("Health() = %v, want nil", err)
	}
	probeErr.Store(&full)
	if h, err := l.Health(t.Context()); !errors.Is(err, ErrNotWritable) || h.Status != "not_writable" {
		t.Errorf("Health() while the probe fails = %q, %v; want not_writable", h.Status, err)
	}
	probeErr.Store(nil)
	if _, err := l.Health(t.Context()); err != nil {
		t.Errorf("Health() once the probe succeeds = %v, want nil", err)
	}
	l.writes.record(writeSequencing, fmt.Errorf("%w: %w", ErrNotWritable, full))
	if _, err := l.Health(t.Context()); !errors.Is(err, ErrNotWritable) {
		t.Errorf("Health() after a failed batch = %v, want ErrNotWritable", err)
	}
	// The probe answers for a write made within the last second: it ends
	// only a failure older than that.
	l.writes.failedMu.Lock()
	l.writes.failed[writeSequencing] = writeFailure{full, time.Now().Add(-2 * probeFreshness)}
	l.writes.failedMu.Unlock()
	if _, err := l.Health(t.Context()); err != nil {
		t.Errorf("Health() after a failed batch and a probe that succeeds = %v, want nil", err)
	}
}

// TestNewWitnessPolicy: docket-log reads its witness policy with the one
// strict tlog-policy parser every verifier uses.
func TestNewWitnessPolicy(t *testing.T) {
	_, other, err := c2sp.GenerateKey("other.example/log")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, policy string
		ok           bool
	}{
		{"quorum none", "quorum none\n", true},
		{"lists this log", "log VKEY https://log/\nquorum none\n", true},
		{"lists others only", "log OTHER\nquorum none\n", false},
		{"no quorum line", "log VKEY\n", false},
		{"CRLF", "quorum none\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kf := filepath.Join(dir, "log.key")
			vkey, err := c2sp.GenerateKeyFile(kf, "example.com/test-log")
			if err != nil {
				t.Fatal(err)
			}
			s, _, err := c2sp.LoadSigner(kf)
			if err != nil {
				t.Fatal(err)
			}
			st, err := posix.Open(t.Context(), filepath.Join(dir, "storage"), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			l, err := New(t.Context(), Config{Driver: st.Driver, Index: st.Index, Signer: s, VKey: vkey,
				WitnessPolicy: []byte(strings.NewReplacer("VKEY", vkey, "OTHER", other).Replace(tt.policy))})
			if (err == nil) != tt.ok {
				t.Fatalf("New with policy %q: %v, want ok %v", tt.policy, err, tt.ok)
			}
			if tt.name == "lists others only" && !strings.Contains(err.Error(), "not this log's key") {
				t.Fatalf("New with policy %q: %v, want the policy refused for not listing the log", tt.policy, err)
			}
			if l != nil {
				l.Close(t.Context())
			}
		})
	}
}

// TestAddFoldedMembers checks that the log refuses, as a malformed entry,
// a signed receipt whose payload holds two members whose names differ only
// in case ("tool_name" and "Tool_name"): a verifier built on encoding/json
// would read another tool than Docket's exact reading does.
func TestAddFoldedMembers(t *testing.T) {
	l, _ := newTestLog(t, t.TempDir(), nil)
	defer l.Close(context.Background())
	priv, _ := receipts.GenerateKey()
	pub := priv.Public().(ed25519.PublicKey)
	payload, err := receipts.CanonicalizeJSON([]byte(`{"Tool_name":"rm","issued_at":"2026-11-21T12:00:00.000Z","issuer_id":"` +
		receipts.KID(pub) + `","session_id":"s","spec":"` + receipts.Spec + `","tool_name":"Bash","type":"protectmcp:decision"}`))
	if err != nil {
		t.Fatal(err)
	}
	entry := []byte(`{"public_key":"` + hex.EncodeToString(pub) + `","receipt":` + string(receipts.SignCanonical(priv, payload)) + `}`)
	if r, err := l.Add(t.Context(), entry); !errors.Is(err, receipts.ErrMalformedEntry) {
		t.Errorf("Add(entry with tool_name and Tool_name) = %+v, %v; want ErrMalformedEntry", r, err)
	}
}

// marshalProof writes what proof.TLogProof's Marshal writes.
func TestMarshalProof(t *testing.T) {
	cp := []byte("example.com/log\n12\nAAAA\n\n— example.com/log sig\n")
	for _, tt := range []struct {
		name   string
		idx    uint64
		hashes int
	}{
		{"no hashes", 0, 0},
		{"one", 1, 1},
		{"many", 1<<40 + 3, 40},
		{"largest index", ^uint64(0), 64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tp := proof.TLogProof{Index: tt.idx, Checkpoint: cp}
			var hashes [][]byte
			for i := range tt.hashes {
				h := sha256.Sum256([]byte{byte(i)})
				tp.Hashes = append(tp.Hashes, h)
				hashes = append(hashes, h[:])
			}
			if got, want := marshalProof(tt.idx, hashes, cp), tp.Marshal(); !bytes.Equal(got, want) {
				t.Errorf("marshalProof = %q, want %q", got, want)
			}
		})
	}
}
