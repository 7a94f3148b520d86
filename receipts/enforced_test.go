package receipts

import "testing"

// An execution may follow a deny only when the deny says it was not
// enforced (observe mode); the decision's enforced member is signed.
func TestExecutionOfUnenforcedDeny(t *testing.T) {
	key, _ := GenerateKey()
	no := false
	yes := true
	for _, tt := range []struct {
		name     string
		decision string
		enforced *bool
		want     Outcome
	}{
		{"unenforced deny", Deny, &no, Valid},
		{"unenforced ask", RequireApproval, &no, Valid},
		{"deny", Deny, nil, Invalid},
		{"deny enforced true", Deny, &yes, Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Sign(key, Payload{Type: TypeDecision, SessionID: "s", Sequence: 1, HookEvent: PreToolUse, ToolName: "Bash",
				Decision: tt.decision, Reason: "cedar_deny", Enforced: tt.enforced})
			if err != nil {
				t.Fatal(err)
			}
			x, err := Sign(key, Payload{Type: TypeDecision, SessionID: "s", Sequence: 2, PreviousReceiptHash: ChainHash(d),
				HookEvent: PostToolUse, ToolName: "Bash", Decision: tt.decision, Reason: ReasonExecuted, DecisionReceiptHash: ChainHash(d)})
			if err != nil {
				t.Fatal(err)
			}
			rs := VerifyChain([][]byte{d, x}, Options{Keys: PinnedKey(pub(key))})
			if rs[0].Outcome != Valid || rs[1].Outcome != tt.want {
				t.Errorf("VerifyChain(%s, its execution) = %v, %v %s; want valid, %v", tt.name, rs[0].Outcome, rs[1].Outcome, rs[1].Cause, tt.want)
			}
			r, err := Open(d, nil)
			if err != nil || (r.Payload.Enforced == nil) != (tt.enforced == nil) {
				t.Errorf("Open(decision).Enforced = %v, %v; want %v", r.Payload.Enforced, err, tt.enforced)
			}
		})
	}
}
