package receipts

import (
	"strconv"
	"unicode/utf8"

	"github.com/docketlog/docket/internal/strictjson"
)

// appendPayload appends the JCS form (RFC 8785) of p to b: the bytes
// CanonicalizeJSON(json.Marshal(p)) returns, written directly, without
// the two documents in between (the relay signs two receipts per call;
// those were a fifth of its allocations). ok is false, and b is to be
// ignored, for a payload it does not write alike: a string that is not
// valid UTF-8 (json.Marshal replaces its bytes) or an integer outside
// ±2^53 (JCS writes it as the double it rounds to); Sign then takes the
// long way. FuzzAppendPayload checks that both ways agree.
//
// The members are written in JCS order, the order of their names' bytes
// (all are ASCII), each omitted when Payload's json tags omit it.
func appendPayload(b []byte, p *Payload) (_ []byte, ok bool) {
	w := jcsObject{b: append(b, '{'), ok: true}
	w.str("agent", p.Agent)
	if c := p.Confinement; c != nil {
		w.name("confinement")
		if c.Unconfined {
			w.b = append(w.b, `"unconfined"`...)
		} else {
			inner := jcsObject{b: append(w.b, '{'), ok: true}
			inner.always("digest", c.Digest)
			inner.always("mechanism", c.Mechanism)
			w.b, w.ok = append(inner.b, '}'), w.ok && inner.ok
		}
	}
	w.str("decision", p.Decision)
	w.str("decision_receipt_hash", p.DecisionReceiptHash)
	w.boolPtr("enforced", p.Enforced)
	w.int("final_sequence", p.FinalSequence)
	w.str("head_hash", p.HeadHash)
	w.str("hook_event", p.HookEvent)
	w.intPtr("hook_latency_ms", p.HookLatencyMs)
	w.always("issued_at", p.IssuedAt)
	w.int("issuer_high_water", p.IssuerHighWater)
	w.always("issuer_id", p.IssuerID)
	w.int("issuer_sequence", p.IssuerSequence)
	w.str("lifecycle_event", p.LifecycleEvent)
	w.str("model", p.Model)
	w.strs("open_sessions", p.OpenSessions)
	w.str("pic_proposal_digest", p.ProposalDigest)
	w.str("policy_digest", p.PolicyDigest)
	w.strs("policy_ids", p.PolicyIDs)
	w.str("previousReceiptHash", p.PreviousReceiptHash)
	w.str("reason", p.Reason)
	w.int("sequence", p.Sequence)
	w.always("session_id", p.SessionID)
	w.always("spec", p.Spec)
	w.intPtr("tool_duration_ms", p.ToolDurationMs)
	w.str("tool_input_commitment", p.ToolInputCommitment)
	w.str("tool_input_hash", p.ToolInputHash)
	w.str("tool_name", p.ToolName)
	w.str("tool_output_hash", p.ToolOutputHash)
	w.boolPtr("tool_ran", p.ToolRan)
	w.str("tool_use_id", p.ToolUseID)
	w.str("transcript_hash", p.TranscriptHash)
	w.str("transcript_position", p.TranscriptPosition)
	w.always("type", p.Type)
	return append(w.b, '}'), w.ok
}

// jcsObject writes the members of a JSON object in the order they are
// given; ok turns false at the first value it cannot write as JCS does.
type jcsObject struct {
	b  []byte
	n  int // members written
	ok bool
}

func (w *jcsObject) name(name string) {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = append(append(append(w.b, '"'), name...), '"', ':')
}

// always writes a string member, empty or not.
func (w *jcsObject) always(name, v string) {
	w.name(name)
	w.string(v)
}

// str writes a string member unless it is empty (omitempty).
func (w *jcsObject) str(name, v string) {
	if v != "" {
		w.always(name, v)
	}
}

func (w *jcsObject) string(v string) {
	if !utf8.ValidString(v) {
		w.ok = false
		return
	}
	w.b = strictjson.AppendString(w.b, v)
}

// strs writes a string array member unless it is empty (omitempty).
func (w *jcsObject) strs(name string, v []string) {
	if len(v) == 0 {
		return
	}
	w.name(name)
	for i, s := range v {
		w.b = append(w.b, "[,"[min(i, 1)])
		w.string(s)
	}
	w.b = append(w.b, ']')
}

// maxExact bounds the integers JCS writes in decimal as they are: beyond
// 2^53 it writes the double an integer rounds to.
const maxExact = 1 << 53

// int writes an integer member unless it is 0 (omitempty).
func (w *jcsObject) int(name string, v int64) {
	if v != 0 {
		w.name(name)
		w.integer(v)
	}
}

// intPtr writes an integer member unless v is nil.
func (w *jcsObject) intPtr(name string, v *int64) {
	if v != nil {
		w.name(name)
		w.integer(*v)
	}
}

func (w *jcsObject) integer(v int64) {
	if v >= maxExact || v <= -maxExact {
		w.ok = false
		return
	}
	w.b = strconv.AppendInt(w.b, v, 10)
}

// boolPtr writes a boolean member unless v is nil.
func (w *jcsObject) boolPtr(name string, v *bool) {
	if v != nil {
		w.name(name)
		w.b = strconv.AppendBool(w.b, *v)
	}
}
