package c2sp_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	f_note "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/formats/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// signReceipts returns n receipts of one session signed by a new issuer key,
// and their log entries.
func signReceipts(t *testing.T, n int) (pub ed25519.PublicKey, recs, leaves [][]byte) {
	t.Helper()
	priv, _ := receipts.GenerateKey()
	pub = priv.Public().(ed25519.PublicKey)
	for i := range n {
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
	return pub, recs, leaves
}

// prove appends leaves to l and returns the proof of entry idx, signed by the
// log and by cosigners.
func prove(l *tlogtest.Log, leaves [][]byte, idx uint64, cosigners ...note.Signer) []byte {
	for _, lf := range leaves {
		l.Tree.AppendData(lf)
	}
	return l.Proof(idx, cosigners...)
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
	l := tlogtest.New("example.com/log")
	other := tlogtest.New("example.com/log")
	w1, v1 := newWitness(t, "w1.example")
	w2, v2 := newWitness(t, "w2.example")
	_, v3 := newWitness(t, "w3.example")
	policy := fmt.Sprintf("log %s\nwitness w1 %s\nwitness w2 %s https://w2.example/\nwitness w3 %s\ngroup g 2 w1 w2 w3\nquorum g\n",
		l.VKey, v1, v2, v3)

	pub, recs, leaves := signReceipts(t, 5)
	good := prove(l, leaves, 3)
	cosigned := prove(l, nil, 4, w1, w2)
	oneCosig := prove(l, nil, 4, w1)
	foreign := prove(other, leaves, 3)

	tests := []struct {
		name    string
		policy  string
		receipt []byte
		proof   []byte
		want    error
	}{
		{"valid", "", recs[3], good, nil},
		{"other receipt", "", recs[2], good, c2sp.ErrInclusion},
		{"another log's key", "", recs[3], foreign, c2sp.ErrCheckpointSig},
		{"malformed", "", recs[3], []byte("c2sp.org/tlog-proof@v1\nindex x\n"), c2sp.ErrProofMalformed},
		{"tampered checkpoint", "", recs[3], bytes.Replace(good, []byte("\n5\n"), []byte("\n6\n"), 1), c2sp.ErrCheckpointSig},
		{"quorum met", policy, recs[4], cosigned, nil},
		{"one cosignature of two", policy, recs[4], oneCosig, c2sp.ErrWitnessQuorum},
		{"no cosignature", policy, recs[3], good, c2sp.ErrWitnessQuorum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, err := c2sp.NewProofVerifier(l.VKey, []byte(tt.policy))
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
	l := tlogtest.New("example.com/log")
	_, v1 := newWitness(t, "w1.example")
	tests := []struct {
		name, policy string
		ok           bool
	}{
		{"none", "", true},
		{"quorum of one", "witness w1 " + v1 + "\nquorum w1\n", true},
		{"no quorum line", "witness w1 " + v1 + "\n", false},
		{"another real log only", "log " + tlogtest.New("example.com/other").VKey + "\nquorum none\n", false},
		{"other log only", "log example.com/x+01234567+AQ\nwitness w1 " + v1 + "\nquorum w1\n", false},
		{"unknown member", "witness w1 " + v1 + "\nquorum w9\n", false},
		{"quorum none", "log " + l.VKey + "\nquorum none\n", true},
		{"one witness counted twice", "witness w1 " + v1 + "\ngroup g 2 w1 w1\nquorum g\n", false},
		{"CRLF", "witness w1 " + v1 + "\r\nquorum w1\r\n", false},
		{"whitespace only", " \n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c2sp.NewProofVerifier(l.VKey, []byte(tt.policy))
			if (err == nil) != tt.ok {
				t.Errorf("NewProofVerifier(%q) = %v, want ok %v", tt.policy, err, tt.ok)
			}
		})
	}
}

// FuzzVerify: Verify never panics on hostile proofs, and whatever it
// accepts proves the leaf's real index.
func FuzzVerify(f *testing.F) {
	l := tlogtest.New("example.com/fuzz")
	leaf := []byte(`{"public_key":"00","receipt":{}}`)
	good := prove(l, [][]byte{[]byte("a"), leaf, []byte("c")}, 1)
	f.Add(good)
	f.Add([]byte("c2sp.org/tlog-proof@v1\nindex 0\n\n"))
	f.Add([]byte("c2sp.org/tlog-proof@v1\nextra AAAA\nindex 18446744073709551615\nAAAA\n\nx\n"))
	pv, err := c2sp.NewProofVerifier(l.VKey, nil)
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

func TestInclusionErrorEvidence(t *testing.T) {
	l := tlogtest.New("example.com/log")
	leaves := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	p := prove(l, leaves, 1)
	pv, err := c2sp.NewProofVerifier(l.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pv.Verify([]byte("not b"), p)
	var ie *c2sp.InclusionError
	if !errors.As(err, &ie) || !errors.Is(err, c2sp.ErrInclusion) {
		t.Fatalf("Verify(other leaf) = %v, want an *InclusionError", err)
	}
	if ie.Index != 1 || string(ie.Leaf) != "not b" || len(ie.Proof) != 2 || !bytes.HasPrefix(ie.Checkpoint, []byte("example.com/log\n3\n")) {
		t.Errorf("InclusionError = %+v, want index 1, the leaf, 2 hashes and the checkpoint", ie)
	}
	report := ie.Report()
	for _, want := range []string{"\t" + strings.ReplaceAll(strings.TrimSuffix(string(ie.Checkpoint), "\n"), "\n", "\n\t"), "\t" + base64.StdEncoding.EncodeToString(ie.Proof[0]) + "\n", "leaf 1"} {
		if !strings.Contains(report, want) {
			t.Errorf("Report() lacks %q:\n%s", want, report)
		}
	}
}

func TestCheckReceipt(t *testing.T) {
	l := tlogtest.New("example.com/log")
	pub, recs, leaves := signReceipts(t, 3)
	for _, leaf := range leaves {
		l.Tree.AppendData(leaf)
	}
	pv, err := c2sp.NewProofVerifier(l.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	valid := receipts.Result{Outcome: receipts.Valid, Key: pub}
	tests := []struct {
		name        string
		in          receipts.Result
		receipt     []byte
		proof       []byte
		wantIndex   int64
		wantOutcome receipts.Outcome
		wantCause   string
	}{
		{"proven", valid, recs[1], l.Proof(1), 1, receipts.Valid, ""},
		{"another entry's proof", valid, recs[1], l.Proof(2), -1, receipts.Invalid, c2sp.CauseInclusion},
		{"malformed proof", valid, recs[1], []byte("not a proof"), -1, receipts.Undecidable, c2sp.CauseBadProof},
		{"not valid to begin with", receipts.Result{Outcome: receipts.Invalid, Cause: "signature"}, recs[1], l.Proof(1), -1, receipts.Invalid, "signature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			got := pv.CheckReceipt(&r, tt.receipt, tt.proof)
			if got != tt.wantIndex || r.Outcome != tt.wantOutcome || r.Cause != tt.wantCause {
				t.Errorf("CheckReceipt = %d, %v %q; want %d, %v %q", got, r.Outcome, r.Cause, tt.wantIndex, tt.wantOutcome, tt.wantCause)
			}
		})
	}
}
