package witnessgroup

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
)

func cosigner(t *testing.T, name string) (note.Signer, string) {
	t.Helper()
	skey, _, err := c2sp.GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, vkey, err := c2sp.NewCosigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

// TestFromPolicy: the Tessera group is satisfied by exactly the checkpoints
// that satisfy the policy, and asks exactly the witnesses the quorum reaches.
func TestFromPolicy(t *testing.T) {
	l := tlogtest.New("example.com/log")
	s1, v1 := cosigner(t, "w1.example")
	s2, v2 := cosigner(t, "w2.example")
	s3, v3 := cosigner(t, "w3.example")
	_, v4 := cosigner(t, "w4.example")
	ws := fmt.Sprintf("log %s\nwitness w1 %s https://w1.example/\nwitness w2 %s https://w2.example/a/\nwitness w3 %s http://w3.example:8080\nwitness w4 %s\n",
		l.VKey, v1, v2, v3, v4)
	cp := func(signers ...note.Signer) []byte {
		return l.Proof(0, signers...) // any checkpoint: the proof's carries the cosignatures
	}
	l.Grow(1)
	signersets := [][]note.Signer{nil, {s1}, {s2}, {s3}, {s1, s2}, {s1, s3}, {s2, s3}, {s1, s2, s3}}
	tests := []struct {
		name      string
		policy    string
		endpoints []string
	}{
		{"one witness", ws + "quorum w1\n", []string{"https://w1.example/add-checkpoint"}},
		{"2 of 3", ws + "group g 2 w1 w2 w3\nquorum g\n",
			[]string{"http://w3.example:8080/add-checkpoint", "https://w1.example/add-checkpoint", "https://w2.example/a/add-checkpoint"}},
		{"nested", ws + "group a any w1 w2\ngroup b all a w3\nquorum b\n",
			[]string{"http://w3.example:8080/add-checkpoint", "https://w1.example/add-checkpoint", "https://w2.example/a/add-checkpoint"}},
		{"a witness without URL outside the quorum", ws + "group a any w1 w4\ngroup b any w2\nquorum b\n", []string{"https://w2.example/a/add-checkpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := c2sp.ParsePolicy([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			g, err := FromPolicy(p)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for u := range g.Endpoints() {
				got = append(got, u)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.endpoints) {
				t.Errorf("Endpoints() = %v, want %v", got, tt.endpoints)
			}
			if all := checkpointOf(t, cp(s1, s2, s3)); !g.Satisfied(all) {
				t.Errorf("tessera Satisfied(all three cosignatures) = false, want true")
			}
			if none := checkpointOf(t, cp()); g.Satisfied(none) {
				t.Errorf("tessera Satisfied(no cosignature) = true, want false")
			}
			for _, set := range signersets {
				text := checkpointOf(t, cp(set...))
				if g.Satisfied(text) != p.Satisfied(text) {
					t.Errorf("%d cosignatures: tessera Satisfied = %v, policy Satisfied = %v", len(set), g.Satisfied(text), p.Satisfied(text))
				}
			}
		})
	}
}

// checkpointOf returns the signed checkpoint of a tlog-proof.
func checkpointOf(t *testing.T, proof []byte) []byte {
	t.Helper()
	_, cp, ok := strings.Cut(string(proof), "\n\n")
	if !ok {
		t.Fatalf("no checkpoint in %q", proof)
	}
	return []byte(cp)
}

func TestFromPolicyErrors(t *testing.T) {
	_, v1 := cosigner(t, "w1.example")
	tests := []struct {
		name, policy string
	}{
		{"quorum witness without URL", "witness w1 " + v1 + "\nquorum w1\n"},
		{"group member without URL", "witness w1 " + v1 + "\ngroup g any w1\nquorum g\n"},
		{"not an http URL", "witness w1 " + v1 + " ftp://w1.example/\nquorum w1\n"},
		{"no host", "witness w1 " + v1 + " https:///x\nquorum w1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := c2sp.ParsePolicy([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			if g, err := FromPolicy(p); err == nil {
				t.Errorf("FromPolicy(%q) = %v, nil; want an error", tt.policy, g)
			}
		})
	}
}

func TestFromPolicyNone(t *testing.T) {
	p, err := c2sp.ParsePolicy([]byte("quorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g, err := FromPolicy(p); g != nil || err != nil {
		t.Errorf("FromPolicy(quorum none) = %v, %v; want nil, nil", g, err)
	}
}
