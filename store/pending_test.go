package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// testLog is a fake log (fakeServer) over loopback HTTP, with a store
// configured to sync to it.
type testLog struct {
	srv *fakeServer
	url string
	log *tlogtest.Log
}

func newTestLog(t testing.TB) *testLog {
	t.Helper()
	l := tlogtest.New("example.com/log")
	f := &fakeServer{log: l, index: map[string]uint64{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &testLog{srv: f, url: srv.URL, log: l}
}

// prove returns the log's proof of a receipt signed by key, appending it
// to the log if it is not there yet.
func (tl *testLog) prove(t testing.TB, key ed25519.PrivateKey, receipt []byte) []byte {
	t.Helper()
	leaf, err := receipts.NewEntry(key.Public().(ed25519.PublicKey), receipt)
	if err != nil {
		t.Fatal(err)
	}
	tl.srv.mu.Lock()
	defer tl.srv.mu.Unlock()
	idx, ok := tl.srv.index[string(leaf)]
	if !ok {
		idx = tl.log.Tree.Size()
		tl.srv.index[string(leaf)] = idx
		tl.log.Tree.AppendData(leaf)
	}
	return tl.log.Proof(idx)
}

func (tl *testLog) posts() int {
	tl.srv.mu.Lock()
	defer tl.srv.mu.Unlock()
	return tl.srv.posts
}

// newSyncStore returns a store with a key, configured to sync to tl.
func newSyncStore(t testing.TB, tl *testLog) (*Store, ed25519.PrivateKey) {
	t.Helper()
	s := Open(t.TempDir())
	priv, kf := receipts.GenerateKey()
	if err := s.WriteKey(kf); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteConfig(Config{LogURL: tl.url, LogKey: tl.log.VKey}); err != nil {
		t.Fatal(err)
	}
	return s, priv
}

// appendN appends n signed decisions to a session, with the
// issuer_sequence Append allocates.
func appendN(t testing.TB, s *Store, key ed25519.PrivateKey, session string, n int) {
	t.Helper()
	for range n {
		_, err := s.Append(session, AppendOptions{}, func(l Link) ([]byte, error) {
			return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: session,
				Sequence: l.Sequence, PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence,
				HookEvent: "PreToolUse", ToolName: "Bash", Decision: receipts.Allow})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// keys returns "session/sequence" of each receipt, sorted.
func keys(us []Unproven) []string {
	var out []string
	for _, u := range us {
		out = append(out, fmt.Sprintf("%s/%d", u.Session, u.Sequence))
	}
	slices.Sort(out)
	return out
}

// putProofs stores the log's proofs of us.
func putProofs(t testing.TB, s *Store, tl *testLog, key ed25519.PrivateKey, us []Unproven) []Ref {
	t.Helper()
	var ps []Proof
	var refs []Ref
	for _, u := range us {
		ps = append(ps, Proof{Session: u.Session, Sequence: u.Sequence, Text: tl.prove(t, key, u.Receipt)})
		refs = append(refs, u.Ref)
	}
	if err := s.PutProofs(ps); err != nil {
		t.Fatal(err)
	}
	return refs
}

func TestPendingIncremental(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	appendN(t, s, key, "a", 3)
	appendN(t, s, key, "b", 2)
	pend, cur, err := s.Pending(Cursor{})
	if want := []string{"a/1", "a/2", "a/3", "b/1", "b/2"}; err != nil || !slices.Equal(keys(pend), want) {
		t.Fatalf("Pending(zero) = %v, %v; want %v", keys(pend), err, want)
	}
	cur = cur.Proven(putProofs(t, s, tl, key, pend[:3])...)

	// Pending from a cursor does not read what it passed: a chain line
	// before it may even be unreadable.
	chain, _ := os.ReadFile(s.ChainPath("a"))
	first := bytes.IndexByte(chain, '\n')
	copy(chain, bytes.Repeat([]byte("x"), first))
	if err := os.WriteFile(s.ChainPath("a"), chain, 0o600); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, key, "a", 1)
	appendN(t, s, key, "c", 1)
	pend, cur, err = s.Pending(cur)
	if want := []string{"a/4", "b/1", "b/2", "c/1"}; err != nil || !slices.Equal(keys(pend), want) {
		t.Fatalf("Pending(cursor) = %v, %v; want %v (the carried b and the new)", keys(pend), err, want)
	}
	cur = cur.Proven(putProofs(t, s, tl, key, pend)...)
	if pend, _, err := s.Pending(cur); err != nil || len(pend) != 0 {
		t.Fatalf("Pending(cursor) with everything proven = %v, %v; want none", keys(pend), err)
	}
	// Proofs stored outside Sync (the strict mode) are not asked for again.
	appendN(t, s, key, "b", 1)
	recs, _ := s.Receipts("b")
	if err := s.PutProofs([]Proof{{Session: "b", Sequence: 3, Text: tl.prove(t, key, recs[2])}}); err != nil {
		t.Fatal(err)
	}
	if pend, _, err := s.Pending(cur); err != nil || len(pend) != 0 {
		t.Fatalf("Pending(cursor) after a receipt proven by Publish = %v, %v; want none", keys(pend), err)
	}
}

// TestPendingRecovers breaks the appends journal or the cursor the ways a
// crash or an older version can, and wants Pending to return every
// receipt without a proof all the same.
func TestPendingRecovers(t *testing.T) {
	journal := func(s *Store) string { return filepath.Join(s.dir, AppendsFile) }
	tests := []struct {
		name   string
		break_ func(t *testing.T, s *Store, cur *Cursor)
	}{
		{"journal lost", func(t *testing.T, s *Store, _ *Cursor) { os.Remove(journal(s)) }},
		{"last line lost", func(t *testing.T, s *Store, _ *Cursor) {
			b, _ := os.ReadFile(journal(s))
			b = b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1]
			os.WriteFile(journal(s), b, 0o600)
		}},
		{"torn last line, then an append", func(t *testing.T, s *Store, _ *Cursor) {
			b, _ := os.ReadFile(journal(s))
			os.WriteFile(journal(s), b[:len(b)-3], 0o600)
		}},
		{"garbage line", func(t *testing.T, s *Store, cur *Cursor) {
			b, _ := os.ReadFile(journal(s))
			b = append(b[:cur.offset], append([]byte("garbage\n"), b[cur.offset:]...)...)
			os.WriteFile(journal(s), b, 0o600)
		}},
		{"journal of another store", func(t *testing.T, s *Store, _ *Cursor) {
			os.WriteFile(journal(s), []byte("1 1 0 a\n2 2 100 a\n"), 0o600)
		}},
		{"cursor past the journal", func(t *testing.T, s *Store, cur *Cursor) { cur.offset += 1 << 20 }},
		{"cursor past the counter", func(t *testing.T, s *Store, cur *Cursor) { cur.issuerSeq += 100 }},
		{"cursor names a receipt elsewhere", func(t *testing.T, s *Store, cur *Cursor) {
			cur.carry = append(cur.carry, Ref{Session: "a", Sequence: 2, offset: 1})
		}},
		{"cursor lost", func(t *testing.T, s *Store, cur *Cursor) { *cur = Cursor{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTestLog(t)
			s, key := newSyncStore(t, tl)
			appendN(t, s, key, "a", 3)
			pend, cur, err := s.Pending(Cursor{})
			if err != nil {
				t.Fatal(err)
			}
			cur = cur.Proven(putProofs(t, s, tl, key, pend[:2])...) // a/3 is carried
			appendN(t, s, key, "a", 2)
			appendN(t, s, key, "b", 1)
			tt.break_(t, s, &cur)
			appendN(t, s, key, "b", 1)
			pend, next, err := s.Pending(cur)
			if want := []string{"a/3", "a/4", "a/5", "b/1", "b/2"}; err != nil || !slices.Equal(keys(pend), want) {
				t.Fatalf("Pending after %s = %v, %v; want %v", tt.name, keys(pend), err, want)
			}
			// And from the cursor it returns, on the incremental path again.
			appendN(t, s, key, "b", 1)
			next = next.Proven(putProofs(t, s, tl, key, pend)...)
			if pend, _, err := s.Pending(next); err != nil || !slices.Equal(keys(pend), []string{"b/3"}) {
				t.Fatalf("Pending after the repair = %v, %v; want [b/3]", keys(pend), err)
			}
		})
	}
}

func TestCursorFile(t *testing.T) {
	s := Open(t.TempDir())
	c := Cursor{valid: true, issuerSeq: 7, offset: 120, carry: []Ref{{Session: "s", Sequence: 3, offset: 40}}}
	if err := s.saveCursor(c); err != nil {
		t.Fatal(err)
	}
	if got := s.loadCursor(); !got.equal(c) {
		t.Fatalf("loadCursor() = %+v, want %+v", got, c)
	}
	for _, bad := range []string{"", "{", `{"issuer_sequence":-1}`, `{"unproven":[{"session":"../x","sequence":1}]}`} {
		os.WriteFile(filepath.Join(s.dir, cursorFile), []byte(bad), 0o600)
		if got := s.loadCursor(); got.valid {
			t.Errorf("loadCursor() of %q = %+v, want the zero Cursor", bad, got)
		}
	}
}

func TestProofJournal(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	appendN(t, s, key, "s", 5)
	recs, _ := s.Receipts("s")
	var ps []Proof
	for i, r := range recs {
		tl.prove(t, key, r) // all in the log first: one checkpoint for all
		ps = append(ps, Proof{Session: "s", Sequence: int64(i + 1)})
	}
	for i := range ps {
		ps[i].Text = tl.prove(t, key, recs[i])
	}
	if err := s.PutProofs(ps[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.PutProofs(ps[3:4]); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(s.proofJournalPath("s"))
	if n := bytes.Count(data, []byte(`"checkpoint":`)); n != 1 {
		t.Errorf("proof journal has %d checkpoint lines for 4 proofs under one checkpoint, want 1", n)
	}
	// A write cut short is ignored, then cut off by the next writer.
	f, _ := os.OpenFile(s.proofJournalPath("s"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"sequence":5,"ind`)
	f.Close()
	if _, err := s.ReadProof("s", 5); err == nil {
		t.Fatalf("ReadProof of a receipt whose proof line is torn = nil error, want none")
	}
	if err := s.PutProofs(ps[4:]); err != nil {
		t.Fatal(err)
	}
	// A line that does not parse costs its proof only.
	data, _ = os.ReadFile(s.proofJournalPath("s"))
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[2] = []byte("{not json}\n") // the proof of receipt 2
	os.WriteFile(s.proofJournalPath("s"), bytes.Join(lines, nil), 0o600)

	pv, _ := c2sp.NewProofVerifier(tl.log.VKey, nil)
	set, err := s.Proofs("s")
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Sequences(); !slices.Equal(got, []int64{1, 3, 4, 5}) {
		t.Fatalf("Proofs(s).Sequences() = %v, want [1 3 4 5]", got)
	}
	for _, n := range set.Sequences() {
		b, _ := set.Get(n)
		if _, err := pv.VerifyReceipt(key.Public().(ed25519.PublicKey), recs[n-1], b); err != nil {
			t.Errorf("VerifyReceipt(%d, stored proof) = %v", n, err)
		}
	}
	if err := s.PutProofs([]Proof{{Session: "s", Sequence: 2, Text: []byte("not a proof")}}); err == nil {
		t.Errorf("PutProofs(not a proof) = nil error, want a refusal")
	}
}

// legacyLayout writes the proofs of a store's receipts as earlier versions
// did, one file per receipt, and removes the journals.
func legacyLayout(t testing.TB, s *Store, tl *testLog, key ed25519.PrivateKey, name string, ext func(seq int64) string) {
	t.Helper()
	recs, _ := s.Receipts(name)
	dir := s.legacyProofDir(name)
	os.MkdirAll(dir, 0o700)
	for i, r := range recs {
		seq := int64(i + 1)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(seq)+ext(seq)), tl.prove(t, key, r), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(s.proofJournalPath(name))
	os.Remove(filepath.Join(s.dir, cursorFile))
	os.Remove(filepath.Join(s.dir, AppendsFile))
}

func TestSyncMigratesLegacyProofs(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	appendN(t, s, key, "a", 4)
	appendN(t, s, key, "b", 2)
	legacyLayout(t, s, tl, key, "a", func(seq int64) string {
		if seq == 2 {
			return LegacyProofExt
		}
		return ProofExt
	})
	legacyLayout(t, s, tl, key, "b", func(int64) string { return ProofExt })
	os.WriteFile(filepath.Join(s.legacyProofDir("a"), "3"+ProofExt), []byte("garbage"), 0o600)

	posts := tl.posts()
	res, err := s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1, MinBackoff: time.Millisecond})
	if err != nil || res.Stored != 1 || res.Pending != 0 {
		t.Fatalf("Sync of a store in the earlier layout = %+v, %v; want the unreadable proof's receipt stored", res, err)
	}
	if got := tl.posts() - posts; got != 1 {
		t.Errorf("Sync posted %d receipts, want 1", got)
	}
	// The files it could read are gone, with the directories they leave
	// empty; the unreadable one stays.
	if ents, _ := os.ReadDir(s.legacyProofDir("a")); len(ents) != 1 || ents[0].Name() != "3"+ProofExt {
		t.Errorf("proofs/a holds %v after the migration, want only the unreadable 3.tlog-proof", ents)
	}
	if _, err := os.Stat(s.legacyProofDir("b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("proofs/b after the migration: %v, want it gone", err)
	}
	pv, _ := c2sp.NewProofVerifier(tl.log.VKey, nil)
	for _, name := range []string{"a", "b"} {
		recs, _ := s.Receipts(name)
		for i, r := range recs {
			p, err := s.ReadProof(name, int64(i+1))
			if err == nil {
				_, err = pv.VerifyReceipt(key.Public().(ed25519.PublicKey), r, p)
			}
			if err != nil {
				t.Errorf("proof of %s/%d after the migration: %v", name, i+1, err)
			}
		}
	}
	res, err = s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1})
	if err != nil || res.Stored != 0 || res.Pending != 0 {
		t.Errorf("second Sync = %+v, %v; want nothing to do", res, err)
	}
	// A migration cut short (the journal written, a file not yet removed):
	// the file goes when the chains are read again.
	p1, _ := s.ReadProof("b", 1)
	os.MkdirAll(s.legacyProofDir("b"), 0o700)
	os.WriteFile(filepath.Join(s.legacyProofDir("b"), "1"+ProofExt), p1, 0o600)
	if res, err := s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1, Rescan: true}); err != nil || res.Stored != 0 {
		t.Fatalf("Sync -rescan = %+v, %v; want nothing submitted", res, err)
	}
	if _, err := os.Stat(s.legacyProofDir("b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("proofs/b after a migration cut short and a rescan: %v, want it gone", err)
	}
}

// blockingLog answers the first n entries, then holds every request until
// the client gives up: a sync killed with receipts in flight.
type blockingLog struct {
	*fakeServer
	mu sync.Mutex
	n  int
}

func (b *blockingLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// It counts single adds: it refuses the batch form as a log from
	// before it would (400), and the client falls back to single adds.
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		http.Error(w, `{"error":"malformed","message":"not one entry"}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.n--
	stop := b.n < 0
	b.mu.Unlock()
	if stop {
		io.Copy(io.Discard, r.Body) // so that the server sees the client go
		<-r.Context().Done()
		return
	}
	b.fakeServer.ServeHTTP(w, r)
}

func TestSyncInterrupted(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	if _, err := s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(s.dir, cursorFile))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, key, "a", 20)
	appendN(t, s, key, "b", 20)
	bl := &blockingLog{fakeServer: tl.srv, n: 15}
	srv := httptest.NewServer(bl)
	defer srv.Close()
	if err := s.WriteConfig(Config{LogURL: srv.URL, LogKey: tl.log.VKey}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for tl.posts() < 15 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := s.Sync(ctx, SyncOptions{CheckpointEvery: -1, Concurrency: 4})
	if !errors.Is(err, context.Canceled) || res.Stored > 15 || res.Stored+res.Pending != 40 {
		t.Fatalf("interrupted Sync = %+v, %v; want canceled, at most 15 stored and the rest pending", res, err)
	}
	// Killed after storing proofs but before saving its cursor: the next
	// Sync finds them in the journals' tails and does not submit them again.
	stored := res.Stored
	if err := s.WriteConfig(Config{LogURL: tl.url, LogKey: tl.log.VKey}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, cursorFile), before, 0o600); err != nil {
		t.Fatal(err)
	}
	posts := tl.posts()
	res, err = s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1})
	if err != nil || res.Stored != 40-stored || res.Pending != 0 {
		t.Fatalf("Sync after the interrupted one = %+v, %v; want the other %d stored", res, err, 40-stored)
	}
	if got := tl.posts() - posts; got != 40-stored {
		t.Errorf("Sync after the interrupted one posted %d receipts, want %d", got, 40-stored)
	}
	if pend, _, err := s.Pending(Cursor{}); err != nil || len(pend) != 0 {
		t.Errorf("every chain read again: %v pending, %v; want none", keys(pend), err)
	}
}

func TestSyncWhileAppending(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	old := compactAt
	compactAt = 256 // compact often
	t.Cleanup(func() { compactAt = old })
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			// Another Store value: another open of every file, as another
			// hook process has.
			appendN(t, Open(s.project), key, fmt.Sprint("s", i), 30)
		})
	}
	done := make(chan struct{})
	var syncErr error
	go func() {
		defer close(done)
		for range 20 {
			if _, err := Open(s.project).Sync(t.Context(), SyncOptions{CheckpointEvery: -1}); err != nil {
				syncErr = err
				return
			}
		}
	}()
	wg.Wait()
	<-done
	if syncErr != nil {
		t.Fatal(syncErr)
	}
	res, err := s.Sync(t.Context(), SyncOptions{CheckpointEvery: -1})
	if err != nil || res.Pending != 0 {
		t.Fatalf("final Sync = %+v, %v; want nothing pending", res, err)
	}
	for i := range 4 {
		set, err := s.Proofs(fmt.Sprint("s", i))
		if err != nil || set.Len() != 30 {
			t.Errorf("session s%d has %d proofs (%v), want 30", i, set.Len(), err)
		}
	}
	if pend, _, err := s.Pending(Cursor{}); err != nil || len(pend) != 0 {
		t.Errorf("every chain read again: %v pending, %v; want none", keys(pend), err)
	}
	if fi, err := os.Stat(filepath.Join(s.dir, AppendsFile)); err != nil || fi.Size() >= 30*4*12 {
		t.Errorf("appends journal after the syncs: %v, %v; want it compacted", fi.Size(), err)
	}
}

func TestCompactionInterrupted(t *testing.T) {
	tl := newTestLog(t)
	s, key := newSyncStore(t, tl)
	appendN(t, s, key, "a", 3)
	pend, cur, _ := s.Pending(Cursor{})
	cur = cur.Proven(putProofs(t, s, tl, key, pend)...)
	// The cursor saved at offset 0, the journal not yet emptied.
	cur.offset = 0
	appendN(t, s, key, "a", 2)
	pend, _, err := s.Pending(cur)
	if want := []string{"a/4", "a/5"}; err != nil || !slices.Equal(keys(pend), want) {
		t.Fatalf("Pending after an unfinished compaction = %v, %v; want %v", keys(pend), err, want)
	}
	if strings.Contains(fmt.Sprint(keys(pend)), "a/1") {
		t.Fatalf("Pending returned a receipt before the cursor")
	}
}
