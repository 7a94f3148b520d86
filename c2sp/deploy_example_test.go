package c2sp

import (
	"os"
	"testing"
)

// TestDeployPolicy: the example policy in deploy/ is one the parser accepts.
func TestDeployPolicy(t *testing.T) {
	b, err := os.ReadFile("../deploy/witnesses.policy")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy(b)
	if err != nil {
		t.Fatalf("ParsePolicy(deploy/witnesses.policy): %v", err)
	}
	if len(p.Logs) != 1 || len(p.Witnesses) != 3 || p.Quorum != "operators" {
		t.Fatalf("deploy/witnesses.policy parsed as %+v", p)
	}
}
