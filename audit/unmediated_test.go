package audit

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// TestUnmediatedFindings: logged unmediated_call receipts are findings
// with their entry as evidence that VerifyEvidence proves; with
// RequireReconciled, so is every session whose session_end records no
// transcript_hash of a record read whole.
func TestUnmediatedFindings(t *testing.T) {
	l := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/auditlog"))
	is := tlogtest.NewIssuer(t)
	ran := true
	end := func(s, th string) []byte {
		ss := is.Sessions[s]
		return is.Sign(s, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end",
			FinalSequence: ss.Seq + 1, HeadHash: ss.Head, TranscriptHash: th})
	}
	var all [][]byte
	// reconciled: one gated call, one unmediated MCP call, reconciled end.
	d, x := is.Call("reconciled", "Bash")
	u := is.Sign("reconciled", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.UnmediatedCall, ToolName: "mcp__outside__echo",
		ToolUseID: "toolu_01", ToolInputHash: "sha256:in", TranscriptPosition: "s.jsonl:22", ToolRan: &ran, Reason: receipts.ReasonNoDecision})
	all = append(all, d, x, u, end("reconciled", "sha256:"+strings.Repeat("ab", 32)))
	// unread: the record could not be read.
	d, x = is.Call("unread", "Bash")
	all = append(all, d, x, end("unread", "unreadable: reading the transcript: no such file"))
	// legacy: ended before reconciliation existed.
	d, x = is.Call("legacy", "Bash")
	all = append(all, d, x, is.End("legacy"))
	// open: no end at all.
	d, x = is.Call("open", "Bash")
	all = append(all, d, x)
	l.Add(t, is.Leaves(all...)...)
	raw, cp := l.Checkpoint(t)

	for _, require := range []bool{false, true} {
		findings, err := Run(t.Context(), Config{Fetcher: client.FileFetcher{Root: l.Dir}, Checkpoint: raw, Size: cp.Size, Root: cp.Hash,
			EvidenceDir: t.TempDir(), RequireReconciled: require}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var unmediated, unreconciled []string
		for _, f := range findings {
			switch f.Kind {
			case KindUnmediatedCall:
				unmediated = append(unmediated, f.Session)
				if !strings.Contains(f.Message, `MCP server "outside"`) || !strings.Contains(f.Message, "s.jsonl:22") || !strings.Contains(f.Message, "a result shows it ran") || f.EvidenceFile == "" || f.Notice {
					t.Errorf("unmediated_call finding = %+v, want the server, the position, ran, and evidence", f)
				}
				b, err := os.ReadFile(f.EvidenceFile)
				if err != nil {
					t.Fatal(err)
				}
				ev, err := ParseEvidence(b)
				if err != nil {
					t.Fatal(err)
				}
				if msg, err := VerifyEvidence(ev, l.Verifier); err != nil || !strings.Contains(msg, "mcp__outside__echo") {
					t.Errorf("VerifyEvidence(unmediated_call) = %q, %v; want proven", msg, err)
				}
			case KindUnreconciled:
				unreconciled = append(unreconciled, f.Session)
			}
		}
		slices.Sort(unreconciled)
		want := []string(nil)
		if require {
			want = []string{"legacy", "open", "unread"}
		}
		if !slices.Equal(unmediated, []string{"reconciled"}) || !slices.Equal(unreconciled, want) {
			t.Errorf("Run(RequireReconciled %v): unmediated_call in %v, unreconciled %v; want [reconciled], %v", require, unmediated, unreconciled, want)
		}
	}
}
