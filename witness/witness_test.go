package witness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
)

func TestAddCheckpoint(t *testing.T) {
	const origin = "example.com/log"
	tests := []struct {
		name string
		cfg  Config
		// prior is the size of a checkpoint cosigned before the request (0: none).
		prior uint64
		body  func(t *testing.T, l *testLog) []byte
		want  int
		// wantBody is the exact 409 body.
		wantBody string
		// wantEvidence is the kind of evidence the request leaves.
		wantEvidence string
	}{
		{
			name: "first checkpoint",
			body: func(t *testing.T, l *testLog) []byte { return l.request(t, 0, 5) },
			want: http.StatusOK,
		},
		{
			name: "first checkpoint of an empty tree",
			body: func(t *testing.T, l *testLog) []byte { return l.request(t, 0, 0) },
			want: http.StatusOK,
		},
		{
			name:  "extends the cosigned checkpoint",
			prior: 5,
			body:  func(t *testing.T, l *testLog) []byte { return l.request(t, 5, 13) },
			want:  http.StatusOK,
		},
		{
			name:  "extends a power of two",
			prior: 8,
			body:  func(t *testing.T, l *testLog) []byte { return l.request(t, 8, 1000) },
			want:  http.StatusOK,
		},
		{
			name:  "same checkpoint again",
			prior: 7,
			body:  func(t *testing.T, l *testLog) []byte { return l.request(t, 7, 7) },
			want:  http.StatusOK,
		},
		{
			name: "checkpoint with an extension line and a foreign signature",
			body: func(t *testing.T, l *testLog) []byte {
				l.Grow(3)
				other := newTestLog(t, "other.example/key")
				cp := []byte(fmt.Sprintf("%s\n3\n%s\nextension\n", l.Origin, b64(l.Tree.HashAt(3))))
				signed, err := note.Sign(&note.Note{Text: string(cp)}, other.Signer, l.Signer)
				if err != nil {
					t.Fatal(err)
				}
				return (&addRequest{OldSize: 0, Checkpoint: signed}).marshal()
			},
			want: http.StatusOK,
		},
		{
			name: "unknown origin",
			body: func(t *testing.T, l *testLog) []byte {
				return newTestLog(t, "unknown.example/log").request(t, 0, 3)
			},
			want: http.StatusNotFound,
		},
		{
			name: "signed by another key with the same origin",
			body: func(t *testing.T, l *testLog) []byte {
				impostor := newTestLog(t, origin)
				return impostor.request(t, 0, 3)
			},
			want: http.StatusForbidden,
		},
		{
			name: "no signature",
			body: func(t *testing.T, l *testLog) []byte {
				l.Grow(3)
				cp := fmt.Sprintf("%s\n3\n%s\n\n", l.Origin, b64(l.Tree.HashAt(3)))
				return []byte("old 0\n\n" + cp)
			},
			want: http.StatusBadRequest, // a note without signature lines is malformed
		},
		{
			name: "signature over another size",
			body: func(t *testing.T, l *testLog) []byte {
				body := l.request(t, 0, 3)
				return bytes.Replace(body, []byte("\n3\n"), []byte("\n4\n"), 1)
			},
			want: http.StatusForbidden,
		},
		{
			name: "corrupted signature",
			body: func(t *testing.T, l *testLog) []byte {
				body := l.request(t, 0, 3)
				i := bytes.LastIndexByte(body, ' ') + 1
				sig, err := base64.StdEncoding.DecodeString(string(body[i : len(body)-1]))
				if err != nil {
					t.Fatal(err)
				}
				sig[len(sig)-1] ^= 1
				return append(body[:i], base64.StdEncoding.EncodeToString(sig)+"\n"...)
			},
			want: http.StatusForbidden,
		},
		{
			name:  "old larger than the checkpoint",
			prior: 10,
			body: func(t *testing.T, l *testLog) []byte {
				return (&addRequest{OldSize: 10, Checkpoint: l.checkpoint(t, 5)}).marshal()
			},
			want: http.StatusBadRequest,
		},
		{
			name:     "old differs from the cosigned size",
			prior:    10,
			body:     func(t *testing.T, l *testLog) []byte { return l.request(t, 5, 20) },
			want:     http.StatusConflict,
			wantBody: "10\n",
		},
		{
			name:     "old given for a log never cosigned",
			body:     func(t *testing.T, l *testLog) []byte { return l.request(t, 4, 20) },
			want:     http.StatusConflict,
			wantBody: "0\n",
		},
		{
			name:     "rollback to an older checkpoint",
			prior:    10,
			body:     func(t *testing.T, l *testLog) []byte { return l.request(t, 5, 5) },
			want:     http.StatusConflict,
			wantBody: "10\n",
		},
		{
			name:     "rollback from zero",
			prior:    10,
			body:     func(t *testing.T, l *testLog) []byte { return l.request(t, 0, 4) },
			want:     http.StatusConflict,
			wantBody: "10\n",
		},
		{
			name:  "corrupted consistency proof",
			prior: 5,
			body: func(t *testing.T, l *testLog) []byte {
				r := &addRequest{OldSize: 5, Proof: l.proof(t, 5, 13), Checkpoint: l.checkpoint(t, 13)}
				r.Proof[1][0] ^= 1
				return r.marshal()
			},
			want:         http.StatusUnprocessableEntity,
			wantEvidence: EvidenceInconsistent,
		},
		{
			name:  "non-empty proof between equal trees",
			prior: 7,
			body: func(t *testing.T, l *testLog) []byte {
				r := &addRequest{OldSize: 7, Proof: [][]byte{make([]byte, 32)}, Checkpoint: l.checkpoint(t, 7)}
				return r.marshal()
			},
			want: http.StatusUnprocessableEntity, // and no evidence: nothing contradicts the cosigned checkpoint
		},
		{
			name:  "consistency proof too short",
			prior: 5,
			body: func(t *testing.T, l *testLog) []byte {
				r := &addRequest{OldSize: 5, Proof: l.proof(t, 5, 13), Checkpoint: l.checkpoint(t, 13)}
				r.Proof = r.Proof[:len(r.Proof)-1]
				return r.marshal()
			},
			want:         http.StatusUnprocessableEntity,
			wantEvidence: EvidenceInconsistent,
		},
		{
			name:  "log forks: same size, another root",
			prior: 10,
			body: func(t *testing.T, l *testLog) []byte {
				fork := testonly.New(rfc6962.DefaultHasher)
				for i := range 10 {
					fork.AppendData([]byte(fmt.Sprintf("forked leaf %d", i)))
				}
				cp := signCheckpoint(t, l.Origin, 10, fork.Hash(), l.Signer)
				return (&addRequest{OldSize: 10, Checkpoint: cp}).marshal()
			},
			want:         http.StatusUnprocessableEntity,
			wantEvidence: EvidenceFork,
		},
		{
			name:  "log forks: a larger tree not extending the cosigned one",
			prior: 10,
			body: func(t *testing.T, l *testLog) []byte {
				fork := testonly.New(rfc6962.DefaultHasher)
				for i := range 16 {
					fork.AppendData([]byte(fmt.Sprintf("forked leaf %d", i)))
				}
				p, err := fork.ConsistencyProof(10, 16)
				if err != nil {
					t.Fatal(err)
				}
				cp := signCheckpoint(t, l.Origin, 16, fork.Hash(), l.Signer)
				return (&addRequest{OldSize: 10, Proof: p, Checkpoint: cp}).marshal()
			},
			want:         http.StatusUnprocessableEntity,
			wantEvidence: EvidenceInconsistent,
		},
		{
			name: "size 0 with a root other than the empty tree's",
			body: func(t *testing.T, l *testLog) []byte {
				cp := signCheckpoint(t, l.Origin, 0, make([]byte, 32), l.Signer)
				return (&addRequest{OldSize: 0, Checkpoint: cp}).marshal()
			},
			want: http.StatusUnprocessableEntity, // and nothing stored, not even evidence
		},
		{
			name: "body too large",
			cfg:  Config{MaxBodySize: 100},
			body: func(t *testing.T, l *testLog) []byte { return l.request(t, 0, 5) },
			want: http.StatusRequestEntityTooLarge,
		},
		{
			name:  "rate limited",
			cfg:   Config{RateLimit: 1e-9, RateBurst: 1},
			prior: 5, // takes the only token
			body:  func(t *testing.T, l *testLog) []byte { return l.request(t, 5, 6) },
			want:  http.StatusTooManyRequests,
		},
		{
			name: "malformed: empty body",
			body: func(t *testing.T, l *testLog) []byte { return nil },
			want: http.StatusBadRequest,
		},
		{
			name: "non-empty proof from old 0",
			body: func(t *testing.T, l *testLog) []byte {
				return (&addRequest{OldSize: 0, Proof: [][]byte{make([]byte, 32)}, Checkpoint: l.checkpoint(t, 3)}).marshal()
			},
			want: http.StatusUnprocessableEntity, // tlog-witness: 422, and no evidence
		},
		{
			name: "malformed: 64 proof lines",
			body: func(t *testing.T, l *testLog) []byte {
				proof := make([][]byte, 64)
				for i := range proof {
					proof[i] = make([]byte, 32)
				}
				return (&addRequest{OldSize: 1, Proof: proof, Checkpoint: l.checkpoint(t, 3)}).marshal()
			},
			want: http.StatusBadRequest,
		},
		{
			name: "malformed: checkpoint size with a leading zero",
			body: func(t *testing.T, l *testLog) []byte {
				l.Grow(3)
				cp := signCheckpoint(t, l.Origin, 3, l.Tree.HashAt(3), l.Signer)
				cp = bytes.Replace(cp, []byte("\n3\n"), []byte("\n03\n"), 1)
				// Re-sign the modified text so that only its syntax is wrong.
				text := strings.SplitN(string(cp), "\n\n", 2)[0] + "\n"
				signed, err := note.Sign(&note.Note{Text: text}, l.Signer)
				if err != nil {
					t.Fatal(err)
				}
				return (&addRequest{Checkpoint: signed}).marshal()
			},
			want: http.StatusBadRequest,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLog(t, origin)
			w := newTestWitness(t, tt.cfg, l)
			if tt.prior > 0 {
				if got := post(t, w, l.request(t, 0, tt.prior)); got.status != http.StatusOK {
					t.Fatalf("Add(old 0, size %d) = %d %q, want 200", tt.prior, got.status, got.body)
				}
			}
			before := do(t, w, "GET", "/"+c2sp.LogID(origin)+"/checkpoint", nil)

			body := tt.body(t, l)
			got := post(t, w, body)
			if got.status != tt.want {
				t.Fatalf("Add(%q) = %d %q, want %d", body, got.status, got.body, tt.want)
			}
			after := do(t, w, "GET", "/"+c2sp.LogID(origin)+"/checkpoint", nil)
			switch got.status {
			case http.StatusOK:
				req, err := parseAddRequest(body)
				if err != nil {
					t.Fatal(err)
				}
				verifyCosignature(t, w.vkey, req.Checkpoint, got.body)
				// The served checkpoint is the log's signed text with our cosignature.
				verifyCosignature(t, w.vkey, []byte(after.body[:strings.LastIndex(after.body[:len(after.body)-1], "\n")+1]),
					after.body[strings.LastIndex(after.body[:len(after.body)-1], "\n")+1:])
				if _, err := note.Open([]byte(after.body), note.VerifierList(mustVerifier(t, l.VKey))); err != nil {
					t.Errorf("served checkpoint: note.Open with the log key = %v", err)
				}
			case http.StatusConflict:
				if got.contentType != "text/x.tlog.size" || got.body != tt.wantBody {
					t.Errorf("Add() = 409 %q %q, want %q %q", got.contentType, got.body, "text/x.tlog.size", tt.wantBody)
				}
			}
			if got.status != http.StatusOK && after != before {
				t.Errorf("GET checkpoint after a refused request = %+v, want unchanged %+v", after, before)
			}

			list, err := w.ListEvidence(t.Context(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantEvidence == "" {
				if len(list) != 0 {
					t.Errorf("ListEvidence() = %d records, want 0", len(list))
				}
				return
			}
			if len(list) != 1 {
				t.Fatalf("ListEvidence() = %d records, want 1", len(list))
			}
			e := list[0]
			req, _ := parseAddRequest(body)
			if e.Kind != tt.wantEvidence || e.Origin != origin || e.OldSize != req.OldSize ||
				e.Submitted != string(req.Checkpoint) || e.Latest != before.body ||
				strings.Join(e.Proof, ",") != strings.Join(encodeProof(req.Proof), ",") {
				t.Errorf("ListEvidence()[0] = %+v, want kind %s, the submitted and latest checkpoints and the proof", e, tt.wantEvidence)
			}
			if !strings.Contains(got.body, fmt.Sprintf("evidence %d", e.ID)) {
				t.Errorf("Add() body = %q, want it to name evidence %d", got.body, e.ID)
			}
			// A retry of the same request is stored once.
			if got := post(t, w, body); got.status != tt.want {
				t.Errorf("Add(retry) = %d, want %d", got.status, tt.want)
			}
			if list, _ := w.ListEvidence(t.Context(), 0); len(list) != 1 {
				t.Errorf("ListEvidence() after retry = %d records, want 1", len(list))
			}
		})
	}
}

func b64(h []byte) string { return encodeProof([][]byte{h})[0] }

func mustVerifier(t testing.TB, vkey string) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSequence(t *testing.T) {
	l := newTestLog(t, "example.com/seq")
	w := newTestWitness(t, Config{RateLimit: -1}, l)
	var old uint64
	for _, size := range []uint64{1, 2, 3, 4, 7, 8, 9, 16, 17, 31, 32, 33, 100, 127, 128, 129, 1000} {
		body := l.request(t, old, size)
		got := post(t, w, body)
		if got.status != http.StatusOK {
			t.Fatalf("Add(old %d, size %d) = %d %q, want 200", old, size, got.status, got.body)
		}
		req, _ := parseAddRequest(body)
		verifyCosignature(t, w.vkey, req.Checkpoint, got.body)
		old = size
	}
}

func TestConcurrentAdd(t *testing.T) {
	const n = 32
	l := newTestLog(t, "example.com/concurrent")
	w := newTestWitness(t, Config{RateLimit: -1}, l)
	srv := httptest.NewServer(w)
	defer srv.Close()
	if got := post(t, w, l.request(t, 0, 10)); got.status != http.StatusOK {
		t.Fatalf("Add(old 0, size 10) = %d %q, want 200", got.status, got.body)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = l.request(t, 10, uint64(11+i))
	}

	start := make(chan struct{})
	results := make([]response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = postHTTP(srv.Client(), srv.URL, bodies[i])
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if r.status == http.StatusOK {
			if winner >= 0 {
				t.Fatalf("requests %d and %d both got 200, want exactly one", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no request got 200, want exactly one")
	}
	winSize := uint64(11 + winner)
	for i, r := range results {
		if i == winner {
			continue
		}
		if want := fmt.Sprintf("%d\n", winSize); r.status != http.StatusConflict || r.body != want || r.contentType != "text/x.tlog.size" {
			t.Errorf("Add(old 10, size %d) = %d %q %q, want 409 %q text/x.tlog.size", 11+i, r.status, r.contentType, r.body, want)
		}
	}

	// A restart loses nothing: the latest checkpoint, and the size old must match.
	before := do(t, w, "GET", "/"+c2sp.LogID(l.Origin)+"/checkpoint", nil)
	w.reopen(t)
	after := do(t, w, "GET", "/"+c2sp.LogID(l.Origin)+"/checkpoint", nil)
	if after != before || !strings.Contains(after.body, fmt.Sprintf("\n%d\n", winSize)) {
		t.Fatalf("GET checkpoint after restart = %+v, want %+v (size %d)", after, before, winSize)
	}
	if got, want := post(t, w, l.request(t, 10, 60)), fmt.Sprintf("%d\n", winSize); got.status != http.StatusConflict || got.body != want {
		t.Errorf("Add(old 10) after restart = %d %q, want 409 %q", got.status, got.body, want)
	}
	if got := post(t, w, l.request(t, winSize, 60)); got.status != http.StatusOK {
		t.Errorf("Add(old %d, size 60) after restart = %d %q, want 200", winSize, got.status, got.body)
	}
}

func TestSetLogs(t *testing.T) {
	a, b := newTestLog(t, "example.com/a"), newTestLog(t, "example.com/b")
	w := newTestWitness(t, Config{}, a)
	if got := post(t, w, b.request(t, 0, 3)); got.status != http.StatusNotFound {
		t.Fatalf("Add(b) = %d, want 404", got.status)
	}
	if err := w.SetLogs([]Log{{VKey: b.VKey}}); err != nil {
		t.Fatal(err)
	}
	if got := post(t, w, b.request(t, 0, 3)); got.status != http.StatusOK {
		t.Errorf("Add(b) after SetLogs = %d %q, want 200", got.status, got.body)
	}
	if got := post(t, w, a.request(t, 0, 3)); got.status != http.StatusNotFound {
		t.Errorf("Add(a) after SetLogs without a = %d, want 404", got.status)
	}
	if err := w.SetLogs([]Log{{VKey: "bad"}}); err == nil {
		t.Errorf("SetLogs(bad key) = nil, want error")
	}
	// Key rotation: two keys for one origin, either signs.
	rotated := newTestLog(t, "example.com/b")
	rotated.Tree = b.Tree
	if err := w.SetLogs([]Log{{VKey: b.VKey}, {VKey: rotated.VKey}}); err != nil {
		t.Fatal(err)
	}
	if got := post(t, w, rotated.request(t, 3, 5)); got.status != http.StatusOK {
		t.Errorf("Add(rotated key) = %d %q, want 200", got.status, got.body)
	}
}

func TestReadEndpoints(t *testing.T) {
	l := newTestLog(t, "example.com/read")
	w := newTestWitness(t, Config{}, l)
	tests := []struct {
		name, method, path string
		want               int
		wantType           string
	}{
		{"health", "GET", "/health", 200, "text/plain; charset=utf-8"},
		{"checkpoint never cosigned", "GET", "/" + c2sp.LogID(l.Origin) + "/checkpoint", 404, ""},
		{"checkpoint of an unknown id", "GET", "/" + strings.Repeat("0", 64) + "/checkpoint", 404, ""},
		{"evidence", "GET", "/evidence", 200, "application/json"},
		{"evidence after", "GET", "/evidence?after=3", 200, "application/json"},
		{"evidence bad after", "GET", "/evidence?after=x", 400, ""},
		{"add-checkpoint is POST only", "GET", "/add-checkpoint", 405, ""},
		{"unknown path", "GET", "/nothing", 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := do(t, w, tt.method, tt.path, nil)
			if got.status != tt.want || (tt.wantType != "" && got.contentType != tt.wantType) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, got.status, got.contentType, tt.want, tt.wantType)
			}
		})
	}
	if got := do(t, w, "GET", "/evidence", nil); strings.TrimSpace(got.body) != "[]" {
		t.Errorf("GET /evidence = %q, want []", got.body)
	}
	post(t, w, l.request(t, 0, 4))
	got := do(t, w, "GET", "/"+c2sp.LogID(l.Origin)+"/checkpoint", nil)
	if got.status != 200 || got.contentType != "text/plain; charset=utf-8" {
		t.Fatalf("GET checkpoint = %d %q, want 200 text/plain", got.status, got.contentType)
	}
	// Evidence is listed as JSON with both checkpoints.
	fork := signCheckpoint(t, l.Origin, 4, make([]byte, 32), l.Signer)
	post(t, w, (&addRequest{OldSize: 4, Checkpoint: fork}).marshal())
	var list []Evidence
	if err := json.Unmarshal([]byte(do(t, w, "GET", "/evidence", nil).body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Latest != got.body || list[0].Submitted != string(fork) {
		t.Errorf("GET /evidence = %+v, want the fork with both checkpoints", list)
	}
	if s := list[0].String(); !strings.Contains(s, got.body) || !strings.Contains(s, string(fork)) {
		t.Errorf("Evidence.String() = %q, want both checkpoints", s)
	}
	if got := do(t, w, "GET", "/evidence?after=1", nil); strings.TrimSpace(got.body) != "[]" {
		t.Errorf("GET /evidence?after=1 = %q, want []", got.body)
	}
}

func TestEvidenceBounded(t *testing.T) {
	l := newTestLog(t, "example.com/bounded")
	w := newTestWitness(t, Config{RateLimit: -1}, l)
	if got := post(t, w, l.request(t, 0, 5)); got.status != http.StatusOK {
		t.Fatalf("Add(old 0, size 5) = %d %q, want 200", got.status, got.body)
	}
	// Anyone holding a signed checkpoint can attach wrong proofs to it: each
	// is refused, and the checkpoint is recorded once.
	for i := range 5 {
		r := &addRequest{OldSize: 5, Proof: l.proof(t, 5, 13), Checkpoint: l.checkpoint(t, 13)}
		r.Proof[0][i] ^= 1
		if got := post(t, w, r.marshal()); got.status != http.StatusUnprocessableEntity {
			t.Fatalf("Add(wrong proof %d) = %d %q, want 422", i, got.status, got.body)
		}
	}
	list, err := w.ListEvidence(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("ListEvidence() = %d records, want 1", len(list))
	}
	// The right proof for the same checkpoint is still accepted.
	if got := post(t, w, l.request(t, 5, 13)); got.status != http.StatusOK {
		t.Errorf("Add(old 5, size 13) = %d %q, want 200", got.status, got.body)
	}
}
