package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
)

// TestKnownSkipsOnlyWhatWasVerified: a caller that vouches for the chain
// hash of a receipt it verified before (Options.Known, ParseEntryKnown)
// saves the signature check of that receipt, and of no other: a receipt
// whose signature was altered has another chain hash, and is refused.
func TestKnownSkipsOnlyWhatWasVerified(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	r, err := Sign(key, Payload{Type: TypeDecision, SessionID: "s", Sequence: 1, HookEvent: "PreToolUse", ToolName: "Bash",
		ToolInputHash: "sha256:x", Decision: Allow})
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(r, []byte(`"}}`)) - 1 // the last hex digit of sig
	bad := bytes.Clone(r)
	bad[i] = "10"[min(1, int(bad[i]-'0'))] // another hex digit ('a'^1 would be none)
	good := ChainHash(r)
	var calls int
	tests := []struct {
		name    string
		receipt []byte
		vouched string // the chain hash the caller verified before
		want    Outcome
	}{
		{"vouched for", r, good, Valid},
		{"signature altered", bad, good, Invalid},
		// A caller that vouches for what it did not verify is believed:
		// the check really is skipped.
		{"altered and vouched for", bad, ChainHash(bad), Valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			known := func(h string, k ed25519.PublicKey) bool {
				calls++
				return h == tt.vouched && k.Equal(pub)
			}
			res := VerifyChain([][]byte{tt.receipt}, Options{Keys: PinnedKey(pub), Known: known})
			if res[0].Outcome != tt.want || calls != 1 {
				t.Errorf("VerifyChain with Known = %v after %d calls, want %v after 1", res[0].Outcome, calls, tt.want)
			}
			e := &Entry{PublicKey: pub, Receipt: tt.receipt}
			calls = 0
			_, err := ParseEntryKnown(e.Leaf(), func(receipt []byte, k ed25519.PublicKey) bool {
				calls++
				return ChainHash(receipt) == tt.vouched && k.Equal(pub)
			})
			if (err == nil) != (tt.want == Valid) || tt.want != Valid && !errors.Is(err, ErrEntrySignature) || calls != 1 {
				t.Errorf("ParseEntryKnown = %v after %d calls, want valid %v after 1", err, calls, tt.want == Valid)
			}
		})
	}
}
