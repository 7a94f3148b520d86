package witness

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
)

// testLog is a log with a real RFC 6962 Merkle tree and a real Ed25519 key.
type testLog struct{ *tlogtest.Log }

func newTestLog(t testing.TB, origin string) *testLog {
	t.Helper()
	return &testLog{tlogtest.New(origin)}
}

// checkpoint returns the checkpoint of size n signed by the log's key.
func (l *testLog) checkpoint(t testing.TB, n uint64) []byte {
	t.Helper()
	return l.Checkpoint(n)
}

func signCheckpoint(t testing.TB, origin string, n uint64, root []byte, signers ...note.Signer) []byte {
	t.Helper()
	return tlogtest.SignCheckpoint(origin, n, root, signers...)
}

// proof returns the consistency proof from old to n (empty from 0).
func (l *testLog) proof(t testing.TB, old, n uint64) [][]byte {
	t.Helper()
	return l.Consistency(old, n)
}

// request returns a valid add-checkpoint body from old to n.
func (l *testLog) request(t testing.TB, old, n uint64) []byte {
	t.Helper()
	r := &addRequest{OldSize: old, Proof: l.proof(t, old, n), Checkpoint: l.checkpoint(t, n)}
	return r.marshal()
}

// testWitness is a Witness with a fresh database and key.
type testWitness struct {
	*Witness
	vkey   string
	dbPath string
	cfg    Config
}

func newTestWitness(t testing.TB, cfg Config, logs ...*testLog) *testWitness {
	t.Helper()
	skey, _, err := note.GenerateKey(rand.Reader, "witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	s, vkey, err := c2sp.NewCosigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Signer = s
	if cfg.DBPath == "" {
		cfg.DBPath = filepath.Join(t.TempDir(), "witness.db")
	}
	for _, l := range logs {
		cfg.Logs = append(cfg.Logs, Log{VKey: l.VKey})
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &testWitness{Witness: w, vkey: vkey, dbPath: cfg.DBPath, cfg: cfg}
}

// reopen closes the witness database and opens a new Witness on it.
func (tw *testWitness) reopen(t testing.TB) {
	t.Helper()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := New(tw.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	tw.Witness = w
}

type response struct {
	status      int
	contentType string
	body        string
}

func do(t testing.TB, h http.Handler, method, path string, body []byte) response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, bytes.NewReader(body)))
	return response{rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()}
}

func post(t testing.TB, h http.Handler, body []byte) response {
	t.Helper()
	return do(t, h, "POST", "/add-checkpoint", body)
}

// postHTTP sends body to a real server.
func postHTTP(c *http.Client, url string, body []byte) (response, error) {
	resp, err := c.Post(url+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}, err
}

// verifyCosignature checks that cosig holds exactly one valid cosignature/v1
// line from the witness key vkey over the checkpoint signedNote.
func verifyCosignature(t testing.TB, vkey string, signedNote []byte, cosig string) {
	t.Helper()
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cosig, "— ") || !strings.HasSuffix(cosig, "\n") || strings.Count(cosig, "\n") != 1 {
		t.Fatalf("cosignature = %q, want one signature line", cosig)
	}
	n, err := note.Open(append(bytes.Clone(signedNote), cosig...), note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open(checkpoint + cosignature) = %v, want nil", err)
	}
	if len(n.Sigs) != 1 {
		t.Fatalf("verified cosignatures = %d, want 1", len(n.Sigs))
	}
	ts, err := fnote.CoSigV1Timestamp(n.Sigs[0])
	if err != nil {
		t.Fatalf("CoSigV1Timestamp = %v", err)
	}
	if ts.Unix() == 0 {
		t.Fatalf("cosignature timestamp is zero, tlog-witness forbids it")
	}
}
