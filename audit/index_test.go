package audit

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/tlogtest"
)

func TestIssuerIndex(t *testing.T) {
	l, is, _ := honest(t)
	other := tlogtest.NewIssuer(t)
	l.Add(t, other.Leaf(other.Start("x")))
	is.Seq++ // one receipt the log never gets
	l.Add(t, is.Leaf(is.Start("s3")))
	raw, cp := l.Checkpoint(t)
	f := client.FileFetcher{Root: l.Dir}
	x := NewIssuerIndex()
	if err := Scan(t.Context(), f, cp.Size, cp.Hash, NewRange(), x.Add); err != nil {
		t.Fatal(err)
	}
	if got := x.Issuers(); !slices.Contains(got, is.KID) || !slices.Contains(got, other.KID) || len(got) != 2 {
		t.Fatalf("Issuers() = %v", got)
	}
	p, err := x.Prove(t.Context(), f, is.KID, raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	s, err := VerifyIssuerIndex(b, l.Verifier)
	if err != nil {
		t.Fatalf("VerifyIssuerIndex: %v", err)
	}
	// honest logs 9 receipts (issuer_sequence 1-9, 9 is the checkpoint at
	// high-water 9), then 10 is missing and 11 is logged.
	if s.Entries != 10 || s.Complete != 9 || s.HighWater != 9 || !slices.Equal(s.Gaps, []Gap{{10, 10}}) {
		t.Fatalf("summary %+v", s)
	}
	// Dropping an entry from the index shows as a gap; altering one fails.
	p.Entries = slices.Delete(p.Entries, 2, 3)
	b, _ = json.Marshal(p)
	if s, err := VerifyIssuerIndex(b, l.Verifier); err != nil || !slices.Equal(s.Gaps, []Gap{{3, 3}, {10, 10}}) {
		t.Fatalf("after dropping: %+v, %v", s, err)
	}
	p.Entries[0].Leaf = p.Entries[1].Leaf
	b, _ = json.Marshal(p)
	if _, err := VerifyIssuerIndex(b, l.Verifier); !errors.Is(err, ErrBadEvidence) {
		t.Fatalf("altered entry: %v, want ErrBadEvidence", err)
	}
}
