package receipts

// The vocabulary of Docket's receipts: the values of the payload members
// hook_event, decision (Allow, Deny, RequireApproval in sign.go), reason
// and lifecycle_event that the gate writes and the verifier reads.

// Hook events (hook_event): Claude Code's event names, whatever the agent.
const (
	PreToolUse         = "PreToolUse"         // a decision on a tool call
	PostToolUse        = "PostToolUse"        // a tool call ran
	PostToolUseFailure = "PostToolUseFailure" // a tool call ran and failed
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
)

// Reasons of execution receipts. A decision's reason is the policy's
// (policy.Reason*).
const (
	ReasonExecuted        = "executed"
	ReasonExecutionFailed = "execution_failed"
	// ReasonCancelled and ReasonServerExited end an MCP tool call that
	// got no response: the client cancelled it, or the server exited.
	ReasonCancelled    = "cancelled"
	ReasonServerExited = "server_exited"
	// ReasonUnlinked: the tool ran with no decision of the gate in the
	// chain to link to (CauseUnlinkedExec when verified).
	ReasonUnlinked = "unlinked_execution"
)

// Lifecycle events (lifecycle_event) of lifecycle receipts.
const (
	LifecycleSessionStart = "session_start"
	LifecycleSessionEnd   = "session_end"
	// LifecycleIssuerCheckpoint: logged by docket sync, it states the
	// issuer_sequence up to which every receipt of the issuer is in the log.
	LifecycleIssuerCheckpoint = "issuer_checkpoint"
	// LifecycleToolsList records an MCP server's tools/list result by hash
	// (tool_output_hash; tool_name is mcp__<server>), when it is first seen
	// in a session and whenever it changes.
	LifecycleToolsList = "mcp_tools_list"
)

// Step is what the link rule looks at in a receipt's payload.
type Step struct {
	HookEvent, Decision, ToolName string
	// Unenforced is set for a decision signed with "enforced": false
	// (observe mode): the policy's deny or ask was answered as an allow.
	Unenforced bool
}

// IsExecution reports whether a receipt records that a tool ran. Such a
// receipt must link (decision_receipt_hash) to a decision it executes.
func (s Step) IsExecution() bool {
	return s.HookEvent == PostToolUse || s.HookEvent == PostToolUseFailure
}

// Executable reports whether a receipt is a decision an execution may link
// to: a PreToolUse allow or require_approval, or a deny that was not
// enforced (observe mode answered it as an allow, and said so in it).
func (s Step) Executable() bool {
	return s.HookEvent == PreToolUse && (s.Decision == Allow || s.Decision == RequireApproval || s.Decision == Deny && s.Unenforced)
}

// Executes is the link rule: an execution links an executable decision of
// the same call, carrying its tool name and decision. The gate links by it
// and the verifier checks it; the call itself (same tool_use_id, or the
// same session, tool and input) is matched by the store.
func (s Step) Executes(decision Step) bool {
	return s.IsExecution() && decision.Executable() && s.ToolName == decision.ToolName && s.Decision == decision.Decision
}
