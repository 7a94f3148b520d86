package strictjson

// intern returns the string of b without allocating when it is one of the
// names and values every receipt and log entry repeats (the members of
// DESIGN §3.1 and §3.4 and their most common values), and the same string
// as an interface value, also without allocating: a log parses thousands
// of entries a second, and these strings and their boxes were a third of
// its allocations. ok is false for any other b. (The compiler switches on
// string(b) without converting it, and the interface values are static.)
func intern(b []byte) (s string, v any, ok bool) {
	i := internIndex(b)
	if i < 0 {
		return "", nil, false
	}
	v = internedValues[i]
	return v.(string), v, true
}

// internIndex returns the index of b in internedValues, -1 when it is not
// there (TestInternTables).
func internIndex(b []byte) int {
	switch string(b) {
	case "public_key":
		return 0
	case "receipt":
		return 1
	case "payload":
		return 2
	case "signature":
		return 3
	case "alg":
		return 4
	case "kid":
		return 5
	case "sig":
		return 6
	case "type":
		return 7
	case "spec":
		return 8
	case "issued_at":
		return 9
	case "issuer_id":
		return 10
	case "session_id":
		return 11
	case "sequence":
		return 12
	case "previousReceiptHash":
		return 13
	case "hook_event":
		return 14
	case "agent":
		return 15
	case "tool_name":
		return 16
	case "tool_use_id":
		return 17
	case "tool_input_hash":
		return 18
	case "tool_output_hash":
		return 19
	case "decision":
		return 20
	case "reason":
		return 21
	case "policy_digest":
		return 22
	case "policy_ids":
		return 23
	case "decision_receipt_hash":
		return 24
	case "hook_latency_ms":
		return 25
	case "tool_duration_ms":
		return 26
	case "lifecycle_event":
		return 27
	case "issuer_sequence":
		return 28
	case "final_sequence":
		return 29
	case "head_hash":
		return 30
	case "issuer_high_water":
		return 31
	case "open_sessions":
		return 32
	case "pic_proposal_digest":
		return 33
	case "model":
		return 34
	case "enforced":
		return 35
	case "transcript_hash":
		return 36
	case "transcript_position":
		return 37
	case "tool_ran":
		return 38
	case "confinement":
		return 39
	case "tool_input_commitment":
		return 40
	case "digest":
		return 41
	case "mechanism":
		return 42
	case "EdDSA":
		return 43
	case "protectmcp:decision":
		return 44
	case "protectmcp:lifecycle":
		return 45
	case "draft-farley-acta-signed-receipts-04":
		return 46
	case "allow":
		return 47
	case "deny":
		return 48
	case "require_approval":
		return 49
	case "PreToolUse":
		return 50
	case "PostToolUse":
		return 51
	case "PostToolUseFailure":
		return 52
	case "SessionStart":
		return 53
	case "SessionEnd":
		return 54
	case "executed":
		return 55
	}
	return -1
}

var internedValues = [...]any{
	"public_key",
	"receipt",
	"payload",
	"signature",
	"alg",
	"kid",
	"sig",
	"type",
	"spec",
	"issued_at",
	"issuer_id",
	"session_id",
	"sequence",
	"previousReceiptHash",
	"hook_event",
	"agent",
	"tool_name",
	"tool_use_id",
	"tool_input_hash",
	"tool_output_hash",
	"decision",
	"reason",
	"policy_digest",
	"policy_ids",
	"decision_receipt_hash",
	"hook_latency_ms",
	"tool_duration_ms",
	"lifecycle_event",
	"issuer_sequence",
	"final_sequence",
	"head_hash",
	"issuer_high_water",
	"open_sessions",
	"pic_proposal_digest",
	"model",
	"enforced",
	"transcript_hash",
	"transcript_position",
	"tool_ran",
	"confinement",
	"tool_input_commitment",
	"digest",
	"mechanism",
	"EdDSA",
	"protectmcp:decision",
	"protectmcp:lifecycle",
	"draft-farley-acta-signed-receipts-04",
	"allow",
	"deny",
	"require_approval",
	"PreToolUse",
	"PostToolUse",
	"PostToolUseFailure",
	"SessionStart",
	"SessionEnd",
	"executed",
}
