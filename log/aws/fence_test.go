package aws_test

import (
	"bytes"
	"database/sql"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/log"
)

// TestFence: writer A claims an entry, hands it to Tessera, and its
// sequencing transaction is held up (a proxy holds its first statement);
// meanwhile the server kills the connection that owns A's claims, so the
// claim looks like a dead writer's. Writer B takes the claim over (after
// the grace of a second), appends the entry and answers with its proof.
// Then A's transaction goes on. The entry must be in the log once: A's
// sequencing must fail (A is fenced), and A, asked again, answers with
// B's index; A then goes on appending new entries.
func TestFence(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	root, err := sql.Open("mysql", p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	hold := newSequencingHolder(t, p.dsn)
	pa := p
	pa.dsn = hold.dsn
	a := pa.start(t, k, t.TempDir())
	b := p.start(t, k, t.TempDir())
	for _, w := range []*writer{a, b} {
		for _, err := w.Health(t.Context()); err != nil; _, err = w.Health(t.Context()) {
			if t.Context().Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	is := tlogtest.NewIssuer(t)
	e := entries(is, "fenced", 1)[0]
	hold.armed.Store(true)
	type result struct {
		r   *log.Result
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		r, err := a.Add(t.Context(), e)
		aDone <- result{r, err}
	}()
	select {
	case <-hold.held:
	case <-t.Context().Done():
		t.Fatal("A's sequencing never started")
	}
	var owner uint64
	if err := root.QueryRow("SELECT `owner` FROM `DocketClaims`").Scan(&owner); err != nil {
		t.Fatalf("reading A's claim: %v", err)
	}
	if _, err := root.Exec("KILL CONNECTION ?", owner); err != nil {
		t.Fatalf("killing A's owning connection: %v", err)
	}

	rb, err := b.Add(t.Context(), e)
	if err != nil {
		t.Fatalf("B.Add(the entry A's lost claim holds) = %v", err)
	}
	ib := k.verify(t, e, rb.Proof)
	close(hold.release)
	ra := <-aDone
	if ra.err == nil && k.verify(t, e, ra.r.Proof) != ib {
		t.Errorf("A.Add(entry) = index %d, B's = %d", k.verify(t, e, ra.r.Proof), ib)
	}
	t.Logf("A.Add(entry), its sequencing held up past B's take-over = %v", ra.err)
	again, err := a.Add(t.Context(), e)
	if err != nil {
		t.Fatalf("A.Add(entry) again = %v", err)
	}
	if i := k.verify(t, e, again.Proof); i != ib {
		t.Errorf("A.Add(entry) again = index %d, want B's %d", i, ib)
	}

	// A lifts its fence and goes on.
	e2 := entries(is, "after", 1)[0]
	r2, err := a.Add(t.Context(), e2)
	if err != nil {
		t.Fatalf("A.Add(a new entry) after the fence = %v", err)
	}
	i2 := k.verify(t, e2, r2.Proof)
	a.close(t)
	b.close(t)
	checkBucket(t, p, map[string]uint64{string(e): ib, string(e2): i2})
}

// sequencingHolder is a dbProxy that, once armed, holds the first
// statement of the next sequencing transaction of Tessera's AWS driver
// (its locking read of SeqCoord) until release is closed.
type sequencingHolder struct {
	*dbProxy
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func newSequencingHolder(t *testing.T, dsn string) *sequencingHolder {
	h := &sequencingHolder{held: make(chan struct{}), release: make(chan struct{})}
	h.dbProxy = newDBProxy(t, dsn, func(_ *proxyConn, q []byte) bool {
		if bytes.HasPrefix(q, []byte("SELECT id, next FROM SeqCoord")) && h.armed.CompareAndSwap(true, false) {
			close(h.held)
			<-h.release
		}
		return false
	})
	return h
}
