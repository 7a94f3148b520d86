package trace

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
)

// BenchmarkVerify verifies the record of a session of 1000 allowed calls
// (2000 receipts): signature, transcript hash, every receipt, the replay.
func BenchmarkVerify(b *testing.B) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))
	digest := Digest([]byte("policy"))
	var chain [][]byte
	prev := ""
	for i := range 1000 {
		in := Digest([]byte{byte(i), byte(i >> 8)})
		d, _ := receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: int64(len(chain) + 1),
			PreviousReceiptHash: prev, HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: in,
			Decision: receipts.Allow, Reason: "cedar_allow", PolicyDigest: digest})
		chain, prev = append(chain, d), receipts.ChainHash(d)
		e, _ := receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: int64(len(chain) + 1),
			PreviousReceiptHash: prev, HookEvent: receipts.PostToolUse, ToolName: "Bash", ToolInputHash: in,
			ToolOutputHash: in, Decision: receipts.Allow, Reason: receipts.ReasonExecuted, DecisionReceiptHash: receipts.ChainHash(d)})
		chain, prev = append(chain, e), receipts.ChainHash(e)
	}
	now := time.Unix(1790000000, 0)
	record, transcript := export(b, key, chain, now)
	opts := Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey)), Now: now, Transcript: transcript, Chain: chain}
	for b.Loop() {
		if rep := Verify(record, opts); rep.Outcome != receipts.Valid {
			b.Fatal(rep.Checks)
		}
	}
	b.ReportMetric(float64(len(transcript))/1000, "transcript-bytes/call")
}
