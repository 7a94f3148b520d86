package logclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/docketlog/docket/logclient"
)

// batchLog serves the batch form of POST /add as docket-log does (a JSON
// array of entries → a JSON array of answers, in order), each entry
// answered as fakeLog answers it alone; other bodies go to fakeLog. With
// old set it refuses arrays as a log without the batch form does (400);
// with short set it answers one answer too few.
type batchLog struct {
	*fakeLog
	old, short bool
	mu         sync.Mutex
	batches    int
}

func (b *batchLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !bytes.HasPrefix(body, []byte("[")) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		b.fakeLog.ServeHTTP(w, r)
		return
	}
	b.mu.Lock()
	b.batches++
	b.mu.Unlock()
	var entries []json.RawMessage
	if b.old || json.Unmarshal(body, &entries) != nil {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"malformed_entry","message":"not an entry"}`)
		return
	}
	answers := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		rec := httptest.NewRecorder()
		b.fakeLog.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/add", bytes.NewReader(e)))
		if rec.Code == http.StatusOK {
			answers = append(answers, map[string]any{"status": 200, "proof": rec.Body.String()})
			continue
		}
		var eb struct{ Error, Message string }
		json.Unmarshal(rec.Body.Bytes(), &eb)
		answers = append(answers, map[string]any{"status": rec.Code, "error": eb.Error, "message": eb.Message, "retry_after": 0})
	}
	if b.short {
		answers = answers[1:]
	}
	json.NewEncoder(w).Encode(answers)
}

func TestSubmitBatch(t *testing.T) {
	jsonEntries := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = fmt.Appendf(nil, `{"n":%d}`, i)
		}
		out[7] = []byte(`{"reject":7}`)
		return out
	}
	tests := []struct {
		name         string
		old, short   bool
		busy         int
		entries      [][]byte
		wantRejected []int
		maxBatches   int // batch requests at most (0: none)
	}{
		{name: "batches with busy entries", busy: 5, entries: jsonEntries(300), wantRejected: []int{7}, maxBatches: 8},
		{name: "an entry too large to share a batch", entries: append(jsonEntries(20), bytes.Repeat([]byte("x"), logclient.MaxBatchBody)),
			wantRejected: []int{7}, maxBatches: 1},
		{name: "a log without the batch form", old: true, entries: jsonEntries(30), wantRejected: []int{7}, maxBatches: 1},
		{name: "an answer one short", short: true, entries: jsonEntries(30), wantRejected: []int{7}, maxBatches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLog()
			f.busy = tt.busy
			b := &batchLog{fakeLog: f, old: tt.old, short: tt.short}
			c := newClientOf(t, f, b)
			var mu sync.Mutex
			calls := make(map[int]int)
			var rejected []int
			err := c.SubmitBatch(t.Context(), tt.entries, func(i int, p *logclient.Proof, err error) {
				mu.Lock()
				defer mu.Unlock()
				calls[i]++
				switch {
				case errors.Is(err, logclient.ErrRejected):
					rejected = append(rejected, i)
				case err != nil:
					t.Errorf("entry %d: %v", i, err)
				case p.Verified.Index != f.indexOf(tt.entries[i]):
					t.Errorf("entry %d: index %d, want %d", i, p.Verified.Index, f.indexOf(tt.entries[i]))
				}
			})
			if err != nil {
				t.Fatalf("SubmitBatch = %v", err)
			}
			for i := range tt.entries {
				if calls[i] != 1 {
					t.Errorf("SubmitBatch called done %d times for entry %d, want 1", calls[i], i)
				}
			}
			if fmt.Sprint(rejected) != fmt.Sprint(tt.wantRejected) {
				t.Errorf("SubmitBatch rejected %v, want %v", rejected, tt.wantRejected)
			}
			if b.batches == 0 || b.batches > tt.maxBatches {
				t.Errorf("SubmitBatch of %d entries sent %d batch requests, want 1 to %d", len(tt.entries), b.batches, tt.maxBatches)
			}
		})
	}
}

// TestSubmitBatchBadProof checks that a proof in a batch answer that does
// not verify is an ErrBadProof for its entry, not retried.
func TestSubmitBatchBadProof(t *testing.T) {
	f := newFakeLog()
	f.lie = true
	c := newClientOf(t, f, &batchLog{fakeLog: f})
	entries := [][]byte{[]byte(`{"a":1}`), []byte(`{"a":2}`)}
	n := 0
	c.SubmitBatch(t.Context(), entries, func(i int, p *logclient.Proof, err error) {
		n++
		if !errors.Is(err, logclient.ErrBadProof) {
			t.Errorf("entry %d with a lying log: %v, want ErrBadProof", i, err)
		}
	})
	if n != 2 || f.postCount() != 2 {
		t.Errorf("SubmitBatch with a lying log: %d done calls and %d entries posted, want 2 and 2", n, f.postCount())
	}
}
