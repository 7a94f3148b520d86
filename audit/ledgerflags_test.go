package audit

import (
	"slices"
	"strings"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// TestLedgerFlagsFromState: observe mode's and reconciliation's findings,
// which the ledger keeps as flag bits of its records, are the same when
// the entries come from a -state directory as when they were just read,
// messages included (those re-read from the log).
func TestLedgerFlagsFromState(t *testing.T) {
	l := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/auditlog"))
	is := tlogtest.NewIssuer(t)
	no, ran := false, true
	dec := is.Sign("observed", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: "sha256:i",
		Decision: receipts.Deny, Reason: "cedar_deny", Enforced: &no})
	x := is.Sign("observed", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PostToolUse, ToolName: "Bash", ToolInputHash: "sha256:i",
		Decision: receipts.Deny, DecisionReceiptHash: receipts.ChainHash(dec)})
	u := is.Sign("observed", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.UnmediatedCall, ToolName: "mcp__outside__echo",
		ToolUseID: "toolu_02", ToolInputHash: "sha256:in", TranscriptPosition: "t.jsonl:7", ToolRan: &ran, Reason: receipts.ReasonNoDecision})
	ss := is.Sessions["observed"]
	end := is.Sign("observed", receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end",
		FinalSequence: ss.Seq + 1, HeadHash: ss.Head, TranscriptHash: "unreadable: gone"})
	l.Add(t, is.Leaves(dec, x, u, end)...)
	state := t.TempDir()
	run := func(state string) []Finding {
		t.Helper()
		raw, cp := l.Checkpoint(t)
		fs, err := Run(t.Context(), Config{Fetcher: client.FileFetcher{Root: l.Dir}, Checkpoint: raw, Size: cp.Size, Root: cp.Hash,
			StateDir: state, RequireReconciled: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	first := run(state)
	d2, x2 := is.Call("later", "Bash")
	l.Add(t, is.Leaves(d2, x2, is.End("later"))...)
	for _, tt := range []struct {
		name  string
		state string
	}{{"from state", state}, {"without state", ""}} {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.state)
			for _, kind := range []string{KindUnenforced, KindUnmediatedCall, KindUnreconciled} {
				want := slices.IndexFunc(first, func(f Finding) bool { return f.Kind == kind })
				i := slices.IndexFunc(got, func(f Finding) bool { return f.Kind == kind && f.Session == "observed" })
				if want < 0 || i < 0 || got[i].Message != first[want].Message {
					t.Errorf("Run %s: %s finding = %v, want %v", tt.name, kind, got, first)
				}
			}
			if slices.ContainsFunc(got, func(f Finding) bool { return f.Kind == KindExecutedDeny }) {
				t.Errorf("Run %s: an execution of an unenforced deny is an executed_deny: %v", tt.name, got)
			}
		})
	}
	for _, want := range []string{"1 deny answered as allow", `MCP server "outside"`, "t.jsonl:7", "not read whole: unreadable: gone"} {
		if !strings.Contains(Report(first), want) {
			t.Errorf("Report = %s, want %q in it", Report(first), want)
		}
	}
}

// TestRunUnconfinedLoaded: a presented chain read lazily (Chain.Load) is
// searched for unconfined calls as it is verified.
func TestRunUnconfinedLoaded(t *testing.T) {
	l := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/auditlog"))
	is := tlogtest.NewIssuer(t)
	d := is.Sign("s", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: "sha256:i",
		Decision: receipts.Allow, Reason: "cedar_allow"})
	x := is.Sign("s", receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PostToolUse, ToolName: "Bash", ToolUseID: "toolu_03",
		ToolInputHash: "sha256:i", Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(d), Confinement: &receipts.Confinement{Unconfined: true}})
	all := [][]byte{d, x, is.End("s")}
	l.Add(t, is.Leaves(all...)...)
	loads := 0
	got := runAudit(t, l, is.Keys(), []Chain{{Source: "s.jsonl", Load: func() ([][]byte, error) { loads++; return all, nil }}})
	var notices []Finding
	for _, f := range got {
		if f.Kind == KindUnconfinedCall {
			notices = append(notices, f)
		}
	}
	if len(notices) != 1 || !notices[0].Notice || notices[0].Source != "s.jsonl" || notices[0].Sequence != 2 || !strings.Contains(notices[0].Message, "toolu_03") {
		t.Errorf("unconfined_call notices = %+v, want one for receipt 2 of s.jsonl", notices)
	}
	if k := kinds(got); len(k) != 0 || loads != 1 {
		t.Errorf("Run = %v after %d loads, want no finding after one load", k, loads)
	}
}
