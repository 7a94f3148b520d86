package receipts

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docketlog/docket/internal/strictjson"
)

// Spec is the receipts draft Docket implements.
const Spec = "draft-farley-acta-signed-receipts-04"

// Receipt types and decisions (DESIGN §3.1).
const (
	TypeDecision  = "protectmcp:decision"
	TypeLifecycle = "protectmcp:lifecycle"

	Allow           = "allow"
	Deny            = "deny"
	RequireApproval = "require_approval"
)

// Payload holds the members Docket signs. Empty members are omitted, never
// written as null; there are no floating-point members.
type Payload struct {
	Type                string   `json:"type"`
	Spec                string   `json:"spec"`
	IssuedAt            string   `json:"issued_at"`
	IssuerID            string   `json:"issuer_id"`
	SessionID           string   `json:"session_id"`
	Sequence            int64    `json:"sequence,omitempty"`
	PreviousReceiptHash string   `json:"previousReceiptHash,omitempty"`
	HookEvent           string   `json:"hook_event,omitempty"`
	Agent               string   `json:"agent,omitempty"`
	ToolName            string   `json:"tool_name,omitempty"`
	ToolUseID           string   `json:"tool_use_id,omitempty"`
	ToolInputHash       string   `json:"tool_input_hash,omitempty"`
	ToolOutputHash      string   `json:"tool_output_hash,omitempty"`
	Decision            string   `json:"decision,omitempty"`
	Reason              string   `json:"reason,omitempty"`
	PolicyDigest        string   `json:"policy_digest,omitempty"`
	PolicyIDs           []string `json:"policy_ids,omitempty"`
	DecisionReceiptHash string   `json:"decision_receipt_hash,omitempty"`
	HookLatencyMs       *int64   `json:"hook_latency_ms,omitempty"`
	ToolDurationMs      *int64   `json:"tool_duration_ms,omitempty"`
	LifecycleEvent      string   `json:"lifecycle_event,omitempty"`
	// IssuerSequence is the receipt's 1-based position among all receipts
	// of its issuer key, across sessions: a gap among an issuer's logged
	// receipts is an omission its own signatures prove.
	IssuerSequence int64 `json:"issuer_sequence,omitempty"`
	// FinalSequence and HeadHash, on session_end, are the session's last
	// sequence and chain hash.
	FinalSequence int64  `json:"final_sequence,omitempty"`
	HeadHash      string `json:"head_hash,omitempty"`
	// IssuerHighWater and OpenSessions, on issuer_checkpoint, are the
	// issuer_sequence reached and the sessions still open.
	IssuerHighWater int64    `json:"issuer_high_water,omitempty"`
	OpenSessions    []string `json:"open_sessions,omitempty"`
	// ProposalDigest, on a decision, is "sha256:" + hex SHA-256 of the JCS
	// form of the PIC action proposal the call carried (docket mcp).
	ProposalDigest string `json:"pic_proposal_digest,omitempty"`
	// Model is the model the agent reports, where it does (Claude Code on
	// SessionStart, Codex with every event): a declaration by the agent,
	// recorded as sent.
	Model string `json:"model,omitempty"`

	// Members fixed by DESIGN §3.1 for milestone 3 (read by Open).

	// Enforced is false only in observe mode, beside a decision that was
	// not enforced; absent otherwise.
	Enforced *bool `json:"enforced,omitempty"`
	// TranscriptHash, on session_end, is the SHA-256 of the agent record
	// the reconciliation read ("sha256:" + hex), or why it could not be
	// read ("unreadable: " + the reason).
	TranscriptHash string `json:"transcript_hash,omitempty"`
	// TranscriptPosition, on an unmediated_call, is where the call stands
	// in the agent's record: the file (relative to the directory of the
	// record's main file), a colon and the 1-based line.
	TranscriptPosition string `json:"transcript_position,omitempty"`
	// ToolRan, on an unmediated_call, says whether the record holds a
	// result of the call (true: it ran; its hash is tool_output_hash).
	ToolRan *bool `json:"tool_ran,omitempty"`
	// Confinement, on a confined call, is the confinement derived from
	// the policy.
	Confinement *Confinement `json:"confinement,omitempty"`
	// ToolInputCommitment is the salted alternative to ToolInputHash.
	ToolInputCommitment string `json:"tool_input_commitment,omitempty"`
}

// Confinement is the payload member confinement: {"mechanism": …,
// "digest": "sha256:…"}, or the string "unconfined" where it could not
// apply (Unconfined, with the other fields empty).
type Confinement struct {
	Mechanism  string
	Digest     string
	Unconfined bool
}

// MarshalJSON writes c as its payload member.
func (c Confinement) MarshalJSON() ([]byte, error) {
	if c.Unconfined {
		return []byte(`"unconfined"`), nil
	}
	return json.Marshal(struct {
		Mechanism string `json:"mechanism"`
		Digest    string `json:"digest"`
	}{c.Mechanism, c.Digest})
}

// UnmarshalParsed reads c from the member as strictjson.Parse returns it.
func (c *Confinement) UnmarshalParsed(v any) error {
	if v == "unconfined" {
		*c = Confinement{Unconfined: true}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf(`must be an object or "unconfined"`)
	}
	var f struct {
		Mechanism string `json:"mechanism"`
		Digest    string `json:"digest"`
	}
	if err := strictjson.Decode(m, &f, strictjson.DisallowUnknown); err != nil {
		return err
	}
	*c = Confinement{Mechanism: f.Mechanism, Digest: f.Digest}
	return nil
}

// FormatTime formats t as the receipts' issued_at: RFC 3339 UTC with
// milliseconds, 2026-11-21T12:34:56.123Z.
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Sign signs p with key and returns the receipt as JCS bytes, the exact form
// that is stored, hashed into the chain and submitted to the log. It fills in
// Spec, IssuerID (from the key) and IssuedAt when they are empty, and refuses
// a payload whose IssuerID is not the key's KID.
func Sign(key ed25519.PrivateKey, p Payload) ([]byte, error) {
	kid := KID(key.Public().(ed25519.PublicKey))
	if p.Spec == "" {
		p.Spec = Spec
	}
	if p.IssuerID == "" {
		p.IssuerID = kid
	}
	if p.IssuedAt == "" {
		p.IssuedAt = FormatTime(time.Now())
	}
	if p.IssuerID != kid {
		return nil, fmt.Errorf("signing: issuer_id %q is not the key's kid %q", p.IssuerID, kid)
	}
	if p.Type == "" || p.SessionID == "" {
		return nil, fmt.Errorf("signing: payload needs type and session_id")
	}
	payload, ok := appendPayload(make([]byte, 0, 1024), &p)
	if !ok {
		j, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
		if payload, err = CanonicalizeJSON(j); err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
	}
	return signCanonical(key, kid, payload), nil
}

// SignCanonical signs an already canonical payload (JCS bytes) and returns
// the whole envelope as JCS bytes.
func SignCanonical(key ed25519.PrivateKey, payload []byte) []byte {
	return signCanonical(key, KID(key.Public().(ed25519.PublicKey)), payload)
}

func signCanonical(key ed25519.PrivateKey, kid string, payload []byte) []byte {
	sig := sign(key, payload)
	b := make([]byte, 0, len(payload)+len(kid)+200)
	b = append(b, `{"payload":`...)
	b = append(b, payload...)
	b = append(b, `,"signature":{"alg":"EdDSA","kid":`...)
	b = strictjson.AppendString(b, kid)
	b = append(b, `,"sig":"`...)
	b = hex.AppendEncode(b, sig)
	return append(b, `"}}`...)
}

// ChainHash returns the chain hash of a receipt that is already in JCS form
// (as Sign returns it): "sha256:" + hex SHA-256 of its bytes. This is the
// value of the next receipt's previousReceiptHash.
func ChainHash(canonical []byte) string {
	return sha256Ref(canonical)
}

// Hash returns the chain hash of a receipt in any JSON form: it parses the
// receipt strictly and hashes its JCS form.
func Hash(receipt []byte) (string, error) {
	c, err := CanonicalizeJSON(receipt)
	if err != nil {
		return "", err
	}
	return sha256Ref(c), nil
}
