package c2sp_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
)

// ExampleProofVerifier verifies a stored tlog-proof offline, with only the
// log's verifier key and a witness policy.
func ExampleProofVerifier() {
	vkey, _ := os.ReadFile("log.key.pub")
	policy, _ := os.ReadFile("witnesses.policy")
	pv, err := c2sp.NewProofVerifier(string(vkey), policy)
	if err != nil {
		fmt.Println(err)
		return
	}
	entry, _ := os.ReadFile("entry.json")
	proof, _ := os.ReadFile("0.tlog-proof")
	vp, err := pv.Verify(entry, proof)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("entry", vp.Index, "of", vp.Size)
}

// ExampleParsePolicy parses a 2-of-3 witness policy.
func ExampleParsePolicy() {
	policy := []byte(`# witnesses of example.com/log
witness w1 w1.example+11c8f4c8+BEtCePP28bkSi/ZxLF65+cydHDRh+AhwUc5Okowfb9iu
witness w2 w2.example+f4cdfafa+BPG7LsTqzdoCg6bxHCtaGB6aiE6H29oo6MK8jL61umPv
witness w3 w3.example+8ec7334c+BNN3mXXtxmksQZESfVAyd+dQJgv0jd6rDW1/bQn754bK
group g 2 w1 w2 w3
quorum g
`)
	p, err := c2sp.ParsePolicy(policy)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(p.Witnesses), "witnesses, quorum", p.Quorum, "needs", p.Groups[0].K)
	// Output: 3 witnesses, quorum g needs 2
}

// ExampleLogID prints the path under which a tlog-witness serves the latest
// checkpoint it cosigned for a log.
func ExampleLogID() {
	fmt.Printf("GET /%s/checkpoint\n", c2sp.LogID("example.com/log"))
}

// ExampleCheckConsistency detects a log that signed two trees of the same
// size: the error is the evidence, both signed checkpoints included.
func ExampleCheckConsistency() {
	skey, vkey, _ := c2sp.GenerateKey("example.com/log")
	signer, _, _ := c2sp.NewSigner(skey)
	verifier, _ := note.NewVerifier(vkey)
	sign := func(text string) []byte {
		n, _ := note.Sign(&note.Note{Text: text}, signer)
		return n
	}
	a := sign("example.com/log\n4\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	b := sign("example.com/log\n4\nAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\n")

	err := c2sp.CheckConsistency(verifier, a, b, nil)
	var ie *c2sp.InconsistencyError
	if errors.As(err, &ie) {
		fmt.Println("fork:", ie.Fork, "size", ie.OldSize)
		fmt.Println(strings.SplitN(err.Error(), "\n", 3)[1])
	}
	// Output:
	// fork: true size 4
	// log misbehavior detected: two checkpoints of size 4 with different roots
}
