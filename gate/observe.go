package gate

import "github.com/docketlog/docket/policy"

// Observe mode (store.Config.Observe, docket init -observe) is for rolling
// a policy out: every call is decided and signed as usual, but a deny or an
// ask the policy gave about a call it understood is answered as an allow,
// and its receipt says so ("enforced": false beside the decision), so that
// the receipts, the audit and docket policy suggest show what the policy
// would have stopped.
//
// Observe mode never turns a failure of the gate into an allow: a policy
// that does not load, a request the policy cannot evaluate (gate_error), a
// call the gate cannot read (invalid_input, the MCP relay's refusals), an
// unreadable configuration (which also cannot say observe is on) and the
// strict mode's log_unavailable are enforced as in every mode. An operator
// observing learns of a broken policy by being stopped, never by a week of
// receipts that observed nothing. In strict mode, a decision observe mode
// answers as an allow waits for the log like any allow, and is refused
// (log_unavailable, enforced) when the log cannot take it.

// observable is the set of reasons a decision observe mode does not
// enforce: the policy's judgements about calls it read, and nothing else.
var observable = map[string]bool{
	policy.ReasonDeny:        true,
	policy.ReasonAsk:         true,
	policy.ReasonDefaultDeny: true,
	policy.ReasonDynamic:     true,
	policy.ReasonParseError:  true,
	policy.ReasonInvalidURL:  true,
}

// Answer is what the caller answers the agent: the decision, or allow for
// a decision observe mode does not enforce (Unenforced).
func (d Decision) Answer() string {
	if d.Unenforced {
		return policy.Allow
	}
	return d.Decision.Decision
}

// unenforced reports whether observe mode answers decision d, made by the
// policy for a call it read, as an allow.
func (g *Gate) unenforced(c Call, d policy.Decision) bool {
	return g.observe && c.Refusal == nil && d.Decision != policy.Allow && observable[d.Reason]
}
