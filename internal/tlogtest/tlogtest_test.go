package tlogtest

import (
	"crypto/rand"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

func TestLog(t *testing.T) {
	for range 20 { // keys whose base64 holds '+' included
		skey, vkey, err := note.GenerateKey(rand.Reader, "example.com/log")
		if err != nil {
			t.Fatal(err)
		}
		l, err := FromKey(skey)
		if err != nil || l.VKey != vkey {
			t.Fatalf("FromKey = %v, %v; want vkey %s", l, err, vkey)
		}
	}
	l := New("example.com/log")
	v, err := note.NewVerifier(l.VKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(l.Checkpoint(7), note.VerifierList(v)); err != nil {
		t.Fatalf("note.Open(Checkpoint(7)) = %v", err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, 3, 7, l.Consistency(3, 7), l.Tree.HashAt(3), l.Tree.HashAt(7)); err != nil {
		t.Errorf("VerifyConsistency(3, 7) = %v", err)
	}
	if p := l.Consistency(0, 7); p != nil {
		t.Errorf("Consistency(0, 7) = %v, want nil", p)
	}
	if _, err := FromKey("not a key"); err == nil {
		t.Error("FromKey(garbage) = nil error")
	}
}
