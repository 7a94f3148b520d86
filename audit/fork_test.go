package audit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/tlogtest"
)

// TestFork is x/mod's TestClientFork for Docket: two logs with one key and
// origin that diverge after a common prefix. The evidence built from the
// second log's tiles proves the fork with the log's public key alone, for
// every pair of sizes, including equal sizes and powers of two.
func TestFork(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/forked")
	a := tlogtest.NewPOSIX(t, t.TempDir(), k)
	b := tlogtest.NewPOSIX(t, t.TempDir(), k)
	is := tlogtest.NewIssuer(t)
	var common [][]byte
	for range 3 {
		d, x := is.Call("s", "Bash")
		common = append(common, is.Leaf(d), is.Leaf(x))
	}
	a.Add(t, common[:4]...)
	b.Add(t, common[:4]...)
	a.Add(t, common[4:]...) // a: 6 entries
	b.Add(t, is.Leaf(is.Start("other")))
	b.Add(t, common[4:]...) // b: 7 entries, diverging at 4
	aRaw, aCP := a.Checkpoint(t)
	bRaw, bCP := b.Checkpoint(t)
	if aCP.Size != 6 || bCP.Size != 7 {
		t.Fatalf("sizes %d, %d, want 6, 7", aCP.Size, bCP.Size)
	}
	ev, err := ForkEvidence(t.Context(), client.FileFetcher{Root: b.Dir}, aRaw, aCP.Size, bRaw, bCP.Size)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := VerifyEvidence(ev, a.Verifier)
	if err != nil {
		t.Fatalf("VerifyEvidence(fork 6→7) = %v, want proven", err)
	}
	t.Log(msg)

	// The honest direction: a's own tree at 4 and at 6 is consistent, so
	// evidence built from it proves nothing.
	for _, m := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint("honest ", m), func(t *testing.T) {
			small := signedAt(t, a, m)
			ev, err := ForkEvidence(t.Context(), client.FileFetcher{Root: a.Dir}, small, m, aRaw, aCP.Size)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := VerifyEvidence(ev, a.Verifier); !errors.Is(err, ErrNotProven) {
				t.Fatalf("VerifyEvidence(honest %d→6) = %v, want ErrNotProven", m, err)
			}
		})
	}
	// A power-of-two old size, whose node RFC 9162 leaves out of the proof.
	c := tlogtest.NewPOSIX(t, t.TempDir(), k)
	c.Add(t, common[:2]...)
	c.Add(t, is.Leaf(is.Start("third")))
	c.Add(t, common[2:]...)
	cRaw, cCP := c.Checkpoint(t)
	ev, err = ForkEvidence(t.Context(), client.FileFetcher{Root: c.Dir}, signedAt(t, a, 4), 4, cRaw, cCP.Size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyEvidence(ev, a.Verifier); err != nil {
		t.Fatalf("VerifyEvidence(fork 4→7) = %v, want proven", err)
	}

	// Same size, other root.
	ev = &Evidence{Kind: KindFork, Checkpoints: []string{string(signedAt(t, a, 5)), string(signedAt(t, b, 5))}}
	if _, err := VerifyEvidence(ev, a.Verifier); err != nil {
		t.Fatalf("VerifyEvidence(same size 5) = %v, want proven", err)
	}
	// A tampered proof is bad evidence, not proof.
	ev, _ = ForkEvidence(t.Context(), client.FileFetcher{Root: b.Dir}, aRaw, aCP.Size, bRaw, bCP.Size)
	ev.ConsistencyProof[1] = ev.ConsistencyProof[0]
	if _, err := VerifyEvidence(ev, a.Verifier); !errors.Is(err, ErrBadEvidence) {
		t.Fatalf("VerifyEvidence(tampered) = %v, want ErrBadEvidence", err)
	}
}

// signedAt returns a checkpoint of l's tree at size n, signed by l's key,
// computed from the log's own tiles.
func signedAt(t *testing.T, l *tlogtest.POSIXLog, n uint64) []byte {
	t.Helper()
	_, cp := l.Checkpoint(t)
	hashes, err := client.FetchLeafHashes(t.Context(), client.FileFetcher{Root: l.Dir}.ReadTile, 0, n, cp.Size)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRange()
	for _, h := range hashes {
		if err := r.Append(h, nil); err != nil {
			t.Fatal(err)
		}
	}
	root, err := r.GetRootHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	return l.Sign(t, n, root)
}
