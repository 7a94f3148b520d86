package log

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// TestAddBatch checks the batch form of POST /add on every storage: each
// entry answered in order with its own proof or with the error a single
// add of it gets, strict dedup within the batch and against the log, and
// the batch refused whole when malformed, too large or not admissible.
func TestAddBatch(t *testing.T) {
	backends(t, func(t *testing.T, dir string) {
		l, v := newTestLog(t, dir, nil)
		defer l.Close(context.Background())
		srv := httptest.NewServer(l.Handler())
		defer srv.Close()
		priv, _ := receipts.GenerateKey()
		e1, e2, e3 := testEntry(t, priv, "b", 1), testEntry(t, priv, "b", 2), testEntry(t, priv, "b", 3)
		single, err := l.Add(t.Context(), e3)
		if err != nil {
			t.Fatal(err)
		}
		bad := bytes.Replace(e1, []byte(`"sequence":1`), []byte(`"sequence":9`), 1)
		body := "[" + string(e1) + ",\n " + string(e2) + "," + string(bad) + `,{"public_key":"00"},` + string(e1) + "," + string(e3) + "]"
		status, answers, raw := postBatch(t, srv.URL, []byte(body))
		if status != 200 {
			t.Fatalf("POST /add batch = %d %s, want 200", status, raw)
		}
		want := []struct {
			status int
			code   string
			leaf   []byte
		}{{200, "", e1}, {200, "", e2}, {422, codeSignature, nil}, {400, codeMalformed, nil}, {200, "", e1}, {200, "", e3}}
		if len(answers) != len(want) {
			t.Fatalf("POST /add batch of %d = %d answers, want %d", len(want), len(answers), len(want))
		}
		idx := make([]uint64, len(want))
		for i, w := range want {
			a := answers[i]
			if a.Status != w.status || a.Error != w.code {
				t.Errorf("answer %d = %d %q, want %d %q", i, a.Status, a.Error, w.status, w.code)
				continue
			}
			if w.leaf != nil {
				if got := checkProof(t, v, w.leaf, []byte(a.Proof)); got != a.Index {
					t.Errorf("answer %d: proof of index %d, index member %d", i, got, a.Index)
				}
				idx[i] = a.Index
			}
		}
		if idx[0] != idx[4] || !answers[4].Duplicate && !answers[0].Duplicate {
			t.Errorf("the same entry twice in a batch = indices %d, %d (duplicate %v, %v), want one index, one a duplicate",
				idx[0], idx[4], answers[0].Duplicate, answers[4].Duplicate)
		}
		if idx[5] != single.Index || !answers[5].Duplicate {
			t.Errorf("an entry already in the log = index %d duplicate %v, want %d true", idx[5], answers[5].Duplicate, single.Index)
		}

		// Refused whole.
		many := "[" + strings.Repeat(`{},`, MaxBatchEntries) + "{}]"
		tests := []struct {
			name   string
			body   string
			status int
			code   string
		}{
			{"empty", "[]", 400, codeMalformed},
			{"not JSON", "[" + string(e1), 400, codeMalformed},
			{"trailing data", "[" + string(e1) + "] x", 400, codeMalformed},
			{"too many entries", many, 400, codeMalformed},
			{"over the size limit", "[" + strings.Repeat(" ", receipts.MaxEntrySize) + "]", 413, codeTooLarge},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				status, _, raw := postBatch(t, srv.URL, []byte(tt.body))
				if status != tt.status || !strings.Contains(raw, `"error":"`+tt.code+`"`) {
					t.Errorf("POST /add %s = %d %s, want %d %s", tt.name, status, raw, tt.status, tt.code)
				}
			})
		}
	})
}

// TestAddBatchAdmission checks that a batch the log cannot take whole is
// refused with 503 and Retry-After, and none of its entries added.
func TestAddBatchAdmission(t *testing.T) {
	l, _ := newTestLog(t, t.TempDir(), func(c *Config) { c.MaxInFlight = 2 })
	defer l.Close(context.Background())
	priv, _ := receipts.GenerateKey()
	entries := [][]byte{testEntry(t, priv, "a", 1), testEntry(t, priv, "a", 2), testEntry(t, priv, "a", 3)}
	if _, _, err := l.AddBatch(t.Context(), entries); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("AddBatch(3 entries, 2 in flight allowed) = %v, want ErrOverloaded", err)
	}
	if n := len(l.inflight); n != 0 {
		t.Errorf("in flight after a refused batch = %d, want 0", n)
	}
	srv := httptest.NewServer(l.Handler())
	defer srv.Close()
	body := append(append([]byte("["), bytes.Join(entries, []byte(","))...), ']')
	resp, err := http.Post(srv.URL+"/add", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("POST /add batch over MaxInFlight = %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	res, errs, err := l.AddBatch(t.Context(), entries[:2])
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("AddBatch(2 entries) = %v %v", err, errs)
	}
	if res[0].Index+res[1].Index != 1 || res[0].Dup || res[1].Dup {
		t.Errorf("AddBatch(2 new entries) = indices %d, %d, want 0 and 1, neither a duplicate", res[0].Index, res[1].Index)
	}
	l.closing.Store(true)
	if _, _, err := l.AddBatch(t.Context(), entries[2:]); !errors.Is(err, ErrClosed) {
		t.Errorf("AddBatch while closing = %v, want ErrClosed", err)
	}
	l.closing.Store(false)
}

func postBatch(t *testing.T, url string, body []byte) (int, []batchAnswer, string) {
	t.Helper()
	resp, err := http.Post(url+"/add", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	var answers []batchAnswer
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(buf.Bytes(), &answers); err != nil {
			t.Fatalf("batch answer %s: %v", buf.String(), err)
		}
	}
	return resp.StatusCode, answers, buf.String()
}

// BenchmarkAddBatch measures AddBatch against Add (BenchmarkAdd) with as
// many entries in flight: batches of 16 from 32 callers.
func BenchmarkAddBatch(b *testing.B) {
	l, _ := newTestLogB(b)
	defer l.Close(context.Background())
	priv, _ := receipts.GenerateKey()
	const size = 16
	leaves := make([][]byte, b.N*size)
	for i := range leaves {
		leaves[i] = testEntry(b, priv, "bench", int64(i+1))
	}
	var next atomic.Int64
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := (next.Add(1) - 1) * size
			_, errs, err := l.AddBatch(context.Background(), leaves[i:i+size])
			if err == nil {
				err = errors.Join(errs...)
			}
			if err != nil {
				b.Error(err)
			}
		}
	})
}

// FuzzSplitBatch checks that a batch body is split without a panic into
// the elements of a JSON array, each the bytes of one JSON value, or
// refused with ErrBatch.
func FuzzSplitBatch(f *testing.F) {
	f.Add([]byte(`[{"public_key":"00","receipt":{}}, {"a":1}]`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[1,"x",null,[2]]`))
	f.Add([]byte(`[{"a":1}] x`))
	f.Add([]byte("[\"\xff\"]"))
	f.Fuzz(func(t *testing.T, body []byte) {
		entries, err := splitBatch(body)
		if err != nil {
			if !errors.Is(err, ErrBatch) {
				t.Errorf("splitBatch(%q) = %v, want an ErrBatch", body, err)
			}
			return
		}
		for i, e := range entries {
			if !json.Valid(e) {
				t.Errorf("splitBatch(%q): element %d %q is not one JSON value", body, i, e)
			}
		}
	})
}
