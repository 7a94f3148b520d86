package audit

import (
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// A deny observe mode did not enforce, and its execution, are one notice
// per session; an enforced deny that was executed is still a violation.
func TestAuditUnenforced(t *testing.T) {
	no := false
	for _, tt := range []struct {
		name       string
		enforced   *bool
		wantKinds  []string
		wantNotice bool
	}{
		{"unenforced", &no, nil, true},
		{"enforced", nil, []string{KindExecutedDeny}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/auditlog"))
			is := tlogtest.NewIssuer(t)
			all := [][]byte{is.Start("s")}
			for _, d := range []string{receipts.Deny, receipts.RequireApproval} {
				dec := is.Sign("s", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: "sha256:i",
					Decision: d, Reason: "cedar_deny", Enforced: tt.enforced})
				x := is.Sign("s", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Bash", ToolInputHash: "sha256:i",
					Decision: d, DecisionReceiptHash: receipts.ChainHash(dec)})
				all = append(all, dec, x)
			}
			all = append(all, is.End("s"), is.Checkpoint())
			l.Add(t, is.Leaves(all...)...)
			got := runAudit(t, l, is.Keys(), []Chain{{Source: "s.jsonl", Receipts: is.Sessions["s"].All}})
			wantKinds := tt.wantKinds
			if tt.enforced == nil {
				// The chain itself does not verify: an execution of a deny.
				wantKinds = []string{KindExecutedDeny, KindInvalidReceipt}
			}
			if k := kinds(got); strings.Join(k, ",") != strings.Join(wantKinds, ",") {
				t.Errorf("Run findings = %v, want %v:\n%s", k, wantKinds, Report(got))
			}
			var notices []Finding
			for _, f := range got {
				if f.Kind == KindUnenforced {
					notices = append(notices, f)
				}
			}
			if tt.wantNotice != (len(notices) == 1) || tt.wantNotice && (!notices[0].Notice || notices[0].Count != 2 ||
				!strings.Contains(notices[0].Message, "1 deny, 1 require_approval answered as allow")) {
				t.Errorf("unenforced notices = %+v, want one counting 2: %v", notices, tt.wantNotice)
			}
		})
	}
}
