package receipts

import "testing"

func TestStepExecutes(t *testing.T) {
	allow := Step{HookEvent: PreToolUse, Decision: Allow, ToolName: "Bash"}
	for _, tt := range []struct {
		name       string
		exec, dec  Step
		wantExecut bool
	}{
		{"post of an allow", Step{PostToolUse, Allow, "Bash"}, allow, true},
		{"failure of an approval", Step{PostToolUseFailure, RequireApproval, "Bash"}, Step{PreToolUse, RequireApproval, "Bash"}, true},
		{"post of a deny", Step{PostToolUse, Deny, "Bash"}, Step{PreToolUse, Deny, "Bash"}, false},
		{"other tool", Step{PostToolUse, Allow, "Write"}, allow, false},
		{"other decision", Step{PostToolUse, RequireApproval, "Bash"}, allow, false},
		{"not an execution", Step{SessionEnd, Allow, "Bash"}, allow, false},
		{"links an execution", Step{PostToolUse, Allow, "Bash"}, Step{PostToolUse, Allow, "Bash"}, false},
	} {
		if got := tt.exec.Executes(tt.dec); got != tt.wantExecut {
			t.Errorf("%s: Executes = %v, want %v", tt.name, got, tt.wantExecut)
		}
	}
}
