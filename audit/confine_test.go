package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/docketlog/docket/receipts"
)

func TestUnconfinedCalls(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(seq int64, c *receipts.Confinement) []byte {
		b, err := receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: seq, HookEvent: receipts.PostToolUse,
			ToolName: "Bash", ToolUseID: "t", Confinement: c})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		c    *receipts.Confinement
		want int
	}{
		{name: "unconfined", c: &receipts.Confinement{Unconfined: true}, want: 1},
		{name: "confined", c: &receipts.Confinement{Mechanism: "landlock", Digest: "sha256:00"}, want: 0},
		{name: "no member", c: nil, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unconfinedCalls(receipts.PinnedKey(pub), Chain{Source: "x.jsonl", Receipts: [][]byte{sign(1, tt.c)}})
			if len(got) != tt.want {
				t.Fatalf("unconfinedCalls = %v, want %d findings", got, tt.want)
			}
			if tt.want == 1 && (got[0].Kind != KindUnconfinedCall || !got[0].Notice) {
				t.Errorf("finding = %+v, want a %s notice", got[0], KindUnconfinedCall)
			}
		})
	}
	// A receipt that does not verify is not reported as unconfined.
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if got := unconfinedCalls(receipts.PinnedKey(other), Chain{Receipts: [][]byte{sign(1, &receipts.Confinement{Unconfined: true})}}); len(got) != 0 {
		t.Errorf("unconfinedCalls(wrong key) = %v, want none", got)
	}
}
