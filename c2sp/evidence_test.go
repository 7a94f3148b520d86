package c2sp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// tree returns a tree of n leaves "<prefix> i".
func tree(prefix string, n int) *testonly.Tree {
	t := testonly.New(rfc6962.DefaultHasher)
	for i := range n {
		t.AppendData(fmt.Appendf(nil, "%s %d", prefix, i))
	}
	return t
}

// TestCheckConsistencyFork is x/mod's TestClientFork for Docket: one origin
// and one key sign two diverging trees. The error must carry both signed
// checkpoints and the proof, so a report built from it needs nothing else.
func TestCheckConsistencyFork(t *testing.T) {
	s, vkey := newLogKey(t, "example.com/log")
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	honest := tree("leaf", 8)
	forked := tree("leaf", 5)
	for i := 5; i < 11; i++ {
		forked.AppendData(fmt.Appendf(nil, "forged %d", i))
	}
	old := signed(t, "example.com/log", 8, honest.Hash(), s)
	newer := signed(t, "example.com/log", 11, forked.Hash(), s)
	proof, err := forked.ConsistencyProof(8, 11) // the proof the forked log serves
	if err != nil {
		t.Fatal(err)
	}
	err = CheckConsistency(v, old, newer, proof)
	var ie *InconsistencyError
	if !errors.As(err, &ie) {
		t.Fatalf("CheckConsistency(fork) = %v, want an *InconsistencyError", err)
	}
	if ie.Fork || !bytes.Equal(ie.Old, old) || !bytes.Equal(ie.New, newer) || len(ie.Proof) != len(proof) {
		t.Errorf("InconsistencyError = %+v, want both checkpoints and the proof", ie)
	}
	msg := err.Error()
	for _, want := range []string{"SECURITY ERROR", indent(old), indent(newer)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
	for _, h := range proof {
		if !strings.Contains(msg, "\t"+b64(h)+"\n") {
			t.Errorf("error message lacks proof hash %s:\n%s", b64(h), msg)
		}
	}

	// Same size, another root: a fork that needs no proof, in either order.
	sameSize := signed(t, "example.com/log", 8, tree("other", 8).Hash(), s)
	for _, pair := range [][2][]byte{{old, sameSize}, {sameSize, old}} {
		err = CheckConsistency(v, pair[0], pair[1], nil)
		if !errors.As(err, &ie) || !ie.Fork || !strings.Contains(err.Error(), "two checkpoints of size 8") {
			t.Errorf("CheckConsistency(same size, other root) = %v, want a fork", err)
		}
	}
}

func TestCheckConsistency(t *testing.T) {
	s, vkey := newLogKey(t, "example.com/log")
	other, _ := newLogKey(t, "example.com/log")
	v, _ := note.NewVerifier(vkey)
	tr := tree("leaf", 9)
	cp := func(n uint64) []byte { return signed(t, "example.com/log", n, tr.HashAt(n), s) }
	proof := func(a, b uint64) [][]byte {
		p, err := tr.ConsistencyProof(a, b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := proof(3, 9)
	bad[0] = bytes.Repeat([]byte{1}, 32)
	tests := []struct {
		name     string
		old, new []byte
		proof    [][]byte
		want     error
		evidence bool
	}{
		{"consistent", cp(3), cp(9), proof(3, 9), nil, false},
		{"consistent, reversed", cp(9), cp(3), proof(3, 9), nil, false},
		{"equal", cp(9), cp(9), nil, nil, false},
		{"from the empty tree", cp(0), cp(9), nil, nil, false},
		{"bad proof", cp(3), cp(9), bad, nil, true},
		{"no proof", cp(3), cp(9), nil, nil, true},
		{"non-empty proof from 0", cp(0), cp(9), proof(3, 9), nil, true},
		{"size 0 with a root", signed(t, "example.com/log", 0, tr.HashAt(1), s), cp(9), nil, nil, true},
		{"old not signed by the log", signed(t, "example.com/log", 3, tr.HashAt(3), other), cp(9), proof(3, 9), ErrCheckpointSig, false},
		{"new not signed by the log", cp(3), signed(t, "example.com/log", 9, tr.HashAt(9), other), proof(3, 9), ErrCheckpointSig, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConsistency(v, tt.old, tt.new, tt.proof)
			var ie *InconsistencyError
			switch {
			case tt.evidence:
				if !errors.As(err, &ie) {
					t.Errorf("CheckConsistency = %v, want an *InconsistencyError", err)
				}
			case tt.want != nil:
				if !errors.Is(err, tt.want) || errors.As(err, &ie) {
					t.Errorf("CheckConsistency = %v, want %v and no evidence", err, tt.want)
				}
			case err != nil:
				t.Errorf("CheckConsistency = %v, want nil", err)
			}
		})
	}
}
