package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// fakeServer answers POST /add from a tlogtest.Log: the first busy requests get
// 503 + Retry-After, entries containing reject get 422, duplicates keep
// their index. It answers the batch form of POST /add as docket-log does,
// each entry as if it came alone (posts counts entries).
type fakeServer struct {
	mu    sync.Mutex
	log   *tlogtest.Log
	index map[string]uint64
	busy  int
	posts int
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		// The batch form: each entry answered as it would be alone.
		var answers []map[string]any
		for _, e := range batch {
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/add", bytes.NewReader(e)))
			a := map[string]any{"status": rec.Code}
			if rec.Code == http.StatusOK {
				a["proof"] = rec.Body.String()
			} else {
				json.Unmarshal(rec.Body.Bytes(), &a)
				a["status"] = rec.Code
			}
			answers = append(answers, a)
		}
		json.NewEncoder(w).Encode(answers)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if f.busy > 0 {
		f.busy--
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"error":"overloaded","message":"busy"}`, http.StatusServiceUnavailable)
		return
	}
	if bytes.Contains(body, []byte("reject")) {
		http.Error(w, `{"error":"bad_signature","message":"no"}`, http.StatusUnprocessableEntity)
		return
	}
	idx, ok := f.index[string(body)]
	if !ok {
		idx = f.log.Tree.Size()
		f.index[string(body)] = idx
		f.log.Tree.AppendData(body)
	}
	w.Write(f.log.Proof(idx))
}

func TestSync(t *testing.T) {
	fl := tlogtest.New("example.com/log")
	fs := &fakeServer{log: fl, index: map[string]uint64{}, busy: 3}
	srv := httptest.NewServer(fs)
	defer srv.Close()

	st := Open(t.TempDir())
	if err := st.WriteConfig(Config{LogURL: srv.URL, LogKey: fl.VKey}); err != nil {
		t.Fatal(err)
	}
	priv, kf := receipts.GenerateKey()
	if err := st.WriteKey(kf); err != nil {
		t.Fatal(err)
	}
	appendReceipt := func(tool string) {
		_, err := st.Append("s1", AppendOptions{}, func(l Link) ([]byte, error) {
			return receipts.Sign(priv, receipts.Payload{Type: "protectmcp:decision", SessionID: "s1",
				Sequence: l.Sequence, PreviousReceiptHash: l.Previous, ToolName: tool})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		appendReceipt("Read")
	}
	// Issuer checkpoints are TestIssuerCheckpoint's.
	opts := SyncOptions{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Concurrency: 2, CheckpointEvery: -1}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := st.Sync(ctx, opts)
	if err != nil || res.Stored != 4 || res.Pending != 0 || len(res.Errors) != 0 {
		t.Fatalf("Sync = %+v, %v; want 4 stored, none pending", res, err)
	}
	pv, _ := c2sp.NewProofVerifier(fl.VKey, nil)
	recs, _ := st.Receipts("s1")
	for i, r := range recs {
		p, err := st.ReadProof("s1", int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pv.VerifyReceipt(priv.Public().(ed25519.PublicKey), r, p); err != nil {
			t.Errorf("VerifyReceipt(%d) = %v", i+1, err)
		}
	}

	// A rejected receipt is reported and stays pending; others still sync.
	appendReceipt("reject")
	appendReceipt("Write")
	posts := fs.posts
	res, err = st.Sync(ctx, opts)
	if err != nil || res.Stored != 1 || res.Pending != 1 || len(res.Errors) != 1 {
		t.Errorf("Sync with a rejected receipt = %+v, %v; want 1 stored, 1 pending, 1 error", res, err)
	}
	if fs.posts-posts != 2 {
		t.Errorf("Sync posted %d entries, want 2 (a rejection is not retried)", fs.posts-posts)
	}
}
