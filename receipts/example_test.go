package receipts_test

import (
	"crypto/ed25519"
	"fmt"

	"github.com/docketlog/docket/receipts"
)

// A hook signs each decision into its session chain; a verifier replays the
// chain with the issuer's key, obtained out of band.
func ExampleVerifyChain() {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	var chain [][]byte
	prev := ""
	for i, decision := range []string{receipts.Allow, receipts.Deny} {
		r, err := receipts.Sign(key, receipts.Payload{
			Type: receipts.TypeDecision, SessionID: "example", Sequence: int64(i + 1),
			PreviousReceiptHash: prev, HookEvent: "PreToolUse", ToolName: "Bash",
			Decision: decision, IssuedAt: "2026-11-21T12:00:00.000Z",
		})
		if err != nil {
			panic(err)
		}
		chain, prev = append(chain, r), receipts.ChainHash(r)
	}
	keys := receipts.PinnedKey(key.Public().(ed25519.PublicKey))
	for i, r := range receipts.VerifyChain(chain, receipts.Options{Keys: keys}) {
		fmt.Println(i+1, r.Outcome, r.KID)
	}
	// Output:
	// 1 valid sb:issuer:4zvwRjXUKGfv
	// 2 valid sb:issuer:4zvwRjXUKGfv
}

// Without a trusted key a receipt is undecidable, never valid.
func ExampleVerify() {
	r := receipts.Verify([]byte(`{"payload":{"type":"protectmcp:decision"},"signature":{"alg":"EdDSA","kid":"sb:issuer:x","sig":"00"}}`), receipts.Options{})
	fmt.Println(r.Outcome, r.Cause)
	// Output:
	// undecidable no_trusted_key
}
