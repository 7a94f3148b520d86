package trace_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/trace"
)

// A session chain becomes a transcript and a signed Trust Record; a
// verifier holding the issuer's key, the transcript and the chain checks
// all three.
func Example() {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	policy := trace.Digest([]byte("the policy files' acta-policy-digest-v1"))
	decision, _ := receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s1", Sequence: 1,
		HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: trace.Digest([]byte("input")),
		Decision: receipts.Deny, Reason: "cedar_deny", PolicyDigest: policy})
	chain := [][]byte{decision}

	s, _ := trace.ReadSession(chain)
	transcript, _ := trace.MarshalTranscript(s.Calls)
	rec, _ := trace.New(trace.Config{Key: key, Session: s, Transcript: transcript,
		TranscriptURI: "https://evidence.example/s1/transcript.json", Measurement: trace.Digest([]byte("docket binary"))})
	signed, _ := trace.Sign(rec, key)

	rep := trace.Verify(signed, trace.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey)),
		Now: time.Unix(rec.IAT, 0), Transcript: transcript, Chain: chain})
	for _, c := range rep.Checks {
		fmt.Println(c.Name, c.Outcome)
	}
	fmt.Println(rep.Outcome, rec.Subject[:12], *rec.ToolTranscript.CallCount)
	// Output:
	// signature valid
	// transcript valid
	// receipts valid
	// valid did:key:z6Mk 1
}
