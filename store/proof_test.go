package store

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"testing"

	f_log "github.com/transparency-dev/formats/log"
	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

// fakeLog is an in-memory log that issues tlog-proofs, optionally cosigned.
type fakeLog struct {
	signer note.Signer
	vkey   string
	tree   *testonly.Tree
}

func newFakeLog(t *testing.T, origin string) *fakeLog {
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := note.NewSigner(skey)
	return &fakeLog{signer: s, vkey: vkey, tree: testonly.New(rfc6962.DefaultHasher)}
}

// prove appends leaves and returns the proof of entry idx, signed by the
// log and by cosigners.
func (l *fakeLog) prove(t *testing.T, leaves [][]byte, idx uint64, cosigners ...note.Signer) []byte {
	for _, lf := range leaves {
		l.tree.AppendData(lf)
	}
	size := l.tree.Size()
	cp := f_log.Checkpoint{Origin: l.signer.Name(), Size: size, Hash: l.tree.Hash()}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(cp)}, append([]note.Signer{l.signer}, cosigners...)...)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := l.tree.InclusionProof(idx, size)
	if err != nil {
		t.Fatal(err)
	}
	tp := proof.TLogProof{Index: idx, Checkpoint: signed}
	for _, h := range ip {
		tp.Hashes = append(tp.Hashes, [32]byte(h))
	}
	return tp.Marshal()
}

func newWitness(t *testing.T, name string) (note.Signer, string) {
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f_note.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := f_note.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, cv
}

func TestVerifyProof(t *testing.T) {
	l := newFakeLog(t, "example.com/log")
	other := newFakeLog(t, "example.com/log")
	w1, v1 := newWitness(t, "w1.example")
	w2, v2 := newWitness(t, "w2.example")
	_, v3 := newWitness(t, "w3.example")
	policy := fmt.Sprintf("log %s\nwitness w1 %s\nwitness w2 %s https://w2.example/\nwitness w3 %s\ngroup g 2 w1 w2 w3\nquorum g\n",
		l.vkey, v1, v2, v3)

	priv, _ := receipts.GenerateKey()
	pub := priv.Public().(ed25519.PublicKey)
	var leaves, recs [][]byte
	for i := range 5 {
		r, err := receipts.Sign(priv, receipts.Payload{Type: "protectmcp:decision", SessionID: "s", Sequence: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := receipts.NewEntry(pub, r)
		if err != nil {
			t.Fatal(err)
		}
		recs, leaves = append(recs, r), append(leaves, leaf)
	}
	good := l.prove(t, leaves, 3)
	cosigned := l.prove(t, nil, 4, w1, w2)
	oneCosig := l.prove(t, nil, 4, w1)
	foreign := other.prove(t, leaves, 3)

	tests := []struct {
		name    string
		policy  string
		receipt []byte
		proof   []byte
		want    error
	}{
		{"valid", "", recs[3], good, nil},
		{"other receipt", "", recs[2], good, ErrInclusion},
		{"another log's key", "", recs[3], foreign, ErrCheckpointSig},
		{"malformed", "", recs[3], []byte("c2sp.org/tlog-proof@v1\nindex x\n"), ErrProofMalformed},
		{"tampered checkpoint", "", recs[3], bytes.Replace(good, []byte("\n5\n"), []byte("\n6\n"), 1), ErrCheckpointSig},
		{"quorum met", policy, recs[4], cosigned, nil},
		{"one cosignature of two", policy, recs[4], oneCosig, ErrWitnessQuorum},
		{"no cosignature", policy, recs[3], good, ErrWitnessQuorum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, err := NewProofVerifier(l.vkey, []byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			_, err = pv.VerifyReceipt(pub, tt.receipt, tt.proof)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("VerifyReceipt = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestProofVerifierPolicy(t *testing.T) {
	l := newFakeLog(t, "example.com/log")
	_, v1 := newWitness(t, "w1.example")
	tests := []struct {
		name, policy string
		ok           bool
	}{
		{"none", "", true},
		{"quorum of one", "witness w1 " + v1 + "\nquorum w1\n", true},
		{"no quorum line", "witness w1 " + v1 + "\n", false},
		{"other log only", "log example.com/x+01234567+AQ\nwitness w1 " + v1 + "\nquorum w1\n", false},
		{"unknown member", "witness w1 " + v1 + "\nquorum w9\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewProofVerifier(l.vkey, []byte(tt.policy))
			if (err == nil) != tt.ok {
				t.Errorf("NewProofVerifier(%q) = %v, want ok %v", tt.policy, err, tt.ok)
			}
		})
	}
}

// FuzzVerify: Verify never panics on hostile proofs, and whatever it
// accepts proves the leaf's real index.
func FuzzVerify(f *testing.F) {
	l := &fakeLog{tree: testonly.New(rfc6962.DefaultHasher)}
	skey, vkey, err := note.GenerateKey(rand.Reader, "example.com/fuzz")
	if err != nil {
		f.Fatal(err)
	}
	l.signer, _ = note.NewSigner(skey)
	l.vkey = vkey
	leaf := []byte(`{"public_key":"00","receipt":{}}`)
	good := l.prove(nil, [][]byte{[]byte("a"), leaf, []byte("c")}, 1)
	f.Add(good)
	f.Add([]byte("c2sp.org/tlog-proof@v1\nindex 0\n\n"))
	f.Add([]byte("c2sp.org/tlog-proof@v1\nextra AAAA\nindex 18446744073709551615\nAAAA\n\nx\n"))
	pv, err := NewProofVerifier(l.vkey, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := pv.Verify(leaf, data); err == nil {
			var tp proof.TLogProof
			if tp.Unmarshal(data) != nil || tp.Index != 1 {
				t.Errorf("Verify accepted %q, which does not prove entry 1", data)
			}
		}
	})
}

// ExampleProofVerifier verifies a stored proof offline, with only the log's
// verifier key (and, optionally, a witness policy).
func ExampleProofVerifier() {
	st := Open("/path/to/project")
	cfg, err := st.LoadConfig()
	if err != nil {
		return
	}
	pv, err := NewProofVerifier(cfg.LogKey, nil)
	if err != nil {
		return
	}
	priv, err := receipts.LoadPrivateKey(st.KeyPath())
	if err != nil {
		return
	}
	recs, _ := st.Receipts("session-1")
	for i, r := range recs {
		p, err := os.ReadFile(st.ProofPath("session-1", int64(i+1)))
		if err != nil {
			continue // not synced yet
		}
		vp, err := pv.VerifyReceipt(priv.Public().(ed25519.PublicKey), r, p)
		fmt.Println(i+1, vp != nil, err)
	}
}
