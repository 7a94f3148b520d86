package store

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// appendSigned appends a receipt (a lifecycle event, if given) to session
// and returns its issuer_sequence.
func appendSigned(t *testing.T, st *Store, _ receipts.KeyFile, session string, event string) int64 {
	t.Helper()
	priv, err := st.Key()
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	_, err = st.Append(session, AppendOptions{}, func(l Link) ([]byte, error) {
		got = l.IssuerSequence
		p := receipts.Payload{Type: receipts.TypeDecision, SessionID: session, Sequence: l.Sequence,
			PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence, ToolName: "Read"}
		if event != "" {
			p.Type, p.LifecycleEvent = receipts.TypeLifecycle, event
		}
		return receipts.Sign(priv, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func newKeyedStore(t *testing.T) (*Store, receipts.KeyFile) {
	t.Helper()
	st := Open(t.TempDir())
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, kf := receipts.GenerateKey()
	if err := st.WriteKey(kf); err != nil {
		t.Fatal(err)
	}
	return st, kf
}

func TestIssuerSequence(t *testing.T) {
	st, kf := newKeyedStore(t)
	var got []int64
	for _, s := range []string{"a", "b", "a", "c", "b"} {
		got = append(got, appendSigned(t, st, kf, s, ""))
	}
	if want := []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("issuer sequences %v, want %v across sessions", got, want)
	}

	journal := filepath.Join(st.dir, IssuerJournalFile)
	writeJournal := func(jr issuerJournal) {
		jr.Boot = bootID()
		b, _ := json.Marshal(jr)
		os.WriteFile(journal, b, 0o600)
	}
	// A crash after journaling 6 for session a, before a's chain got it:
	// 6 is handed out again, not skipped.
	writeJournal(issuerJournal{Last: 6, Session: "a"})
	if n := appendSigned(t, st, kf, "b", ""); n != 6 {
		t.Errorf("after a crash before the append: issuer_sequence %d, want 6", n)
	}
	// A crash after a's chain got 7 but before the journal said so: 8 next.
	if n := appendSigned(t, st, kf, "a", ""); n != 7 {
		t.Fatalf("issuer_sequence %d, want 7", n)
	}
	writeJournal(issuerJournal{Last: 7, Session: "a"})
	if n := appendSigned(t, st, kf, "c", ""); n != 8 {
		t.Errorf("after a crash after the append: issuer_sequence %d, want 8", n)
	}
	// A journal written before a reboot is not trusted (its last writes
	// may not have reached the disk): the counter comes from the chains.
	os.WriteFile(journal, []byte(`{"last":3,"session":"b","done":true,"boot":"an-earlier-boot"}`), 0o600)
	if n := appendSigned(t, st, kf, "b", ""); n != 9 {
		t.Errorf("after a reboot: issuer_sequence %d, want 9", n)
	}
	// A journal that is lost or torn is rebuilt from the chains.
	for _, data := range []string{"", `{"last":`} {
		os.WriteFile(journal, []byte(data), 0o600)
		want := appendSigned(t, st, kf, "a", "")
		if want != 10 && want != 11 {
			t.Errorf("after journal %q: issuer_sequence %d, want the next after the chains' highest", data, want)
		}
	}
	// A receipt that fails to build leaves no gap.
	_, err := st.Append("a", AppendOptions{}, func(Link) ([]byte, error) { return nil, errors.New("no") })
	if err == nil {
		t.Fatal("Append with a failing build succeeded")
	}
	if n := appendSigned(t, st, kf, "b", ""); n != 12 {
		t.Errorf("after a failed build: issuer_sequence %d, want 12", n)
	}
}

func TestIssuerSequenceConcurrent(t *testing.T) {
	st, kf := newKeyedStore(t)
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 10 {
				n := appendSigned(t, st, kf, string(rune('a'+w%3)), "")
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(got)
	for i, n := range got {
		if n != int64(i+1) {
			t.Fatalf("issuer sequences not 1..80 exactly once: %v", got)
		}
	}
}

func TestIssuerCheckpoint(t *testing.T) {
	fl := tlogtest.New("example.com/log")
	fs := &fakeServer{log: fl, index: map[string]uint64{}}
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	st, kf := newKeyedStore(t)
	if err := st.WriteConfig(Config{LogURL: srv.URL, LogKey: fl.VKey}); err != nil {
		t.Fatal(err)
	}
	appendSigned(t, st, kf, "open", "")
	appendSigned(t, st, kf, "closed", "")
	appendSigned(t, st, kf, "closed", receipts.LifecycleSessionEnd)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	opts := SyncOptions{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, CheckpointEvery: time.Hour}
	res, err := st.Sync(ctx, opts)
	if err != nil || res.Stored != 4 || res.Checkpoint != 3 || res.Pending != 0 {
		t.Fatalf("Sync = %+v, %v; want 3 receipts and a checkpoint at 3 stored", res, err)
	}
	rs, _ := st.Receipts(IssuerSession)
	var cp struct {
		Payload receipts.Payload `json:"payload"`
	}
	if len(rs) != 1 || json.Unmarshal(rs[0], &cp) != nil {
		t.Fatalf("issuer chain %q", rs)
	}
	if p := cp.Payload; p.LifecycleEvent != receipts.LifecycleIssuerCheckpoint || p.IssuerHighWater != 3 || p.IssuerSequence != 4 || !slices.Equal(p.OpenSessions, []string{"open"}) {
		t.Fatalf("checkpoint payload %+v", p)
	}
	if _, err := st.ReadProof(IssuerSession, 1); err != nil {
		t.Fatalf("the checkpoint was not logged: %v", err)
	}
	// Nothing new: no checkpoint. New receipts, a recent checkpoint: none
	// until the interval passes (0: now).
	if res, _ := st.Sync(ctx, opts); res.Checkpoint != 0 {
		t.Errorf("a checkpoint with nothing new: %+v", res)
	}
	appendSigned(t, st, kf, "open", "")
	if res, _ := st.Sync(ctx, opts); res.Checkpoint != 0 || res.Stored != 1 {
		t.Errorf("a checkpoint within the interval: %+v", res)
	}
	opts.CheckpointEvery = 0
	if res, _ := st.Sync(ctx, opts); res.Checkpoint != 5 {
		t.Errorf("Sync = %+v, want a checkpoint at 5", res)
	}
}
