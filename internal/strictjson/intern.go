package strictjson

// intern returns the string of b without allocating when it is one of the
// names and values every receipt and log entry repeats (the members of
// DESIGN §3.1 and §3.4 and their most common values): a log parses
// thousands of entries a second, and their member names were a third of
// its allocations. ok is false for any other b. (The compiler switches on
// string(b) without converting it.)
func intern(b []byte) (s string, ok bool) {
	switch string(b) {
	case "public_key":
		return "public_key", true
	case "receipt":
		return "receipt", true
	case "payload":
		return "payload", true
	case "signature":
		return "signature", true
	case "alg":
		return "alg", true
	case "kid":
		return "kid", true
	case "sig":
		return "sig", true
	case "type":
		return "type", true
	case "spec":
		return "spec", true
	case "issued_at":
		return "issued_at", true
	case "issuer_id":
		return "issuer_id", true
	case "session_id":
		return "session_id", true
	case "sequence":
		return "sequence", true
	case "previousReceiptHash":
		return "previousReceiptHash", true
	case "hook_event":
		return "hook_event", true
	case "agent":
		return "agent", true
	case "tool_name":
		return "tool_name", true
	case "tool_use_id":
		return "tool_use_id", true
	case "tool_input_hash":
		return "tool_input_hash", true
	case "tool_output_hash":
		return "tool_output_hash", true
	case "decision":
		return "decision", true
	case "reason":
		return "reason", true
	case "policy_digest":
		return "policy_digest", true
	case "policy_ids":
		return "policy_ids", true
	case "decision_receipt_hash":
		return "decision_receipt_hash", true
	case "hook_latency_ms":
		return "hook_latency_ms", true
	case "tool_duration_ms":
		return "tool_duration_ms", true
	case "lifecycle_event":
		return "lifecycle_event", true
	case "issuer_sequence":
		return "issuer_sequence", true
	case "final_sequence":
		return "final_sequence", true
	case "head_hash":
		return "head_hash", true
	case "issuer_high_water":
		return "issuer_high_water", true
	case "open_sessions":
		return "open_sessions", true
	case "pic_proposal_digest":
		return "pic_proposal_digest", true
	case "model":
		return "model", true
	case "enforced":
		return "enforced", true
	case "transcript_hash":
		return "transcript_hash", true
	case "transcript_position":
		return "transcript_position", true
	case "tool_ran":
		return "tool_ran", true
	case "confinement":
		return "confinement", true
	case "tool_input_commitment":
		return "tool_input_commitment", true
	case "digest":
		return "digest", true
	case "mechanism":
		return "mechanism", true
	// Values.
	case "EdDSA":
		return "EdDSA", true
	case "protectmcp:decision":
		return "protectmcp:decision", true
	case "protectmcp:lifecycle":
		return "protectmcp:lifecycle", true
	case "draft-farley-acta-signed-receipts-04":
		return "draft-farley-acta-signed-receipts-04", true
	case "allow":
		return "allow", true
	case "deny":
		return "deny", true
	case "require_approval":
		return "require_approval", true
	case "PreToolUse":
		return "PreToolUse", true
	case "PostToolUse":
		return "PostToolUse", true
	case "PostToolUseFailure":
		return "PostToolUseFailure", true
	case "SessionStart":
		return "SessionStart", true
	case "SessionEnd":
		return "SessionEnd", true
	case "executed":
		return "executed", true
	}
	return "", false
}
