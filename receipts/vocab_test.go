package receipts

import "testing"

func TestStepExecutes(t *testing.T) {
	allow := Step{HookEvent: PreToolUse, Decision: Allow, ToolName: "Bash"}
	for _, tt := range []struct {
		name       string
		exec, dec  Step
		wantExecut bool
	}{
		{"post of an allow", Step{PostToolUse, Allow, "Bash", false}, allow, true},
		{"failure of an approval", Step{PostToolUseFailure, RequireApproval, "Bash", false}, Step{PreToolUse, RequireApproval, "Bash", false}, true},
		{"post of a deny", Step{PostToolUse, Deny, "Bash", false}, Step{PreToolUse, Deny, "Bash", false}, false},
		{"other tool", Step{PostToolUse, Allow, "Write", false}, allow, false},
		{"other decision", Step{PostToolUse, RequireApproval, "Bash", false}, allow, false},
		{"not an execution", Step{SessionEnd, Allow, "Bash", false}, allow, false},
		{"post of an unenforced deny", Step{PostToolUse, Deny, "Bash", false}, Step{PreToolUse, Deny, "Bash", true}, true},
		{"post of an unenforced ask", Step{PostToolUse, RequireApproval, "Bash", false}, Step{PreToolUse, RequireApproval, "Bash", true}, true},
		{"unenforced deny of another tool", Step{PostToolUse, Deny, "Write", false}, Step{PreToolUse, Deny, "Bash", true}, false},
		{"links an execution", Step{PostToolUse, Allow, "Bash", false}, Step{PostToolUse, Allow, "Bash", false}, false},
	} {
		if got := tt.exec.Executes(tt.dec); got != tt.wantExecut {
			t.Errorf("%s: Executes = %v, want %v", tt.name, got, tt.wantExecut)
		}
	}
}
