package trace

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// A Call is one entry of a tool transcript: one tool call of the session,
// built from its decision receipt and, when the tool ran, its execution
// receipt. Hashes are the receipts' own ("sha256:" + hex of SHA-256 of the
// JCS of the tool input or output); raw arguments never enter a transcript.
type Call struct {
	// CallIndex is the call's 0-based position in the session.
	CallIndex int `json:"call_index"`
	// ToolName is the tool as the agent names it.
	ToolName string `json:"tool_name"`
	// InputHash is the decision receipt's tool_input_hash.
	InputHash string `json:"input_hash,omitempty"`
	// OutputHash is the execution receipt's tool_output_hash; absent when
	// the tool did not run (or its execution was not recorded).
	OutputHash string `json:"output_hash,omitempty"`
	// StartedAt is the issued_at of the decision receipt: when the gate
	// decided, just before the tool ran.
	StartedAt string `json:"started_at"`
	// DurationMs is the execution receipt's tool_duration_ms.
	DurationMs *int64 `json:"duration_ms,omitempty"`
	// Decision is the gate's decision (allow, deny, require_approval), or
	// Ungated for a tool that ran with no decision in the chain.
	Decision string `json:"decision"`
	// ReceiptHash is the chain hash of the decision receipt (the value a
	// next receipt's previousReceiptHash carries).
	ReceiptHash string `json:"receipt_hash,omitempty"`
	// ExecutionReceiptHash is the chain hash of the execution receipt.
	ExecutionReceiptHash string `json:"execution_receipt_hash,omitempty"`
}

// Ungated is the Decision of a call whose execution receipt links to no
// decision of the gate (receipts.ReasonUnlinked): the tool ran ungated.
const Ungated = "ungated"

// payload is what a transcript reads from a receipt.
type payload struct {
	SessionID           string `json:"session_id"`
	Sequence            int64  `json:"sequence"`
	IssuedAt            string `json:"issued_at"`
	HookEvent           string `json:"hook_event"`
	Agent               string `json:"agent"`
	Model               string `json:"model"`
	ToolName            string `json:"tool_name"`
	ToolInputHash       string `json:"tool_input_hash"`
	ToolOutputHash      string `json:"tool_output_hash"`
	Decision            string `json:"decision"`
	PolicyDigest        string `json:"policy_digest"`
	DecisionReceiptHash string `json:"decision_receipt_hash"`
	ToolDurationMs      *int64 `json:"tool_duration_ms"`
}

// A Session is what a Trust Record states about one session chain.
type Session struct {
	ID string
	// Calls is the tool transcript.
	Calls []Call
	// PolicyDigests are the distinct policy_digest values of the session's
	// decisions, in order of first use.
	PolicyDigests []string
	// Agent and Model are the last ones the receipts report ("" if none).
	Agent, Model string
	// Last is the last receipt of the chain and LastSequence its sequence.
	Last         []byte
	LastSequence int64
}

// ReadSession builds the transcript of a session chain (its receipts in
// order, as stored). Every PreToolUse decision is a call; an execution
// completes the call whose decision it links to (decision_receipt_hash), and
// an execution linked to none is a call of its own, Ungated. Lifecycle
// receipts are not calls. ReadSession checks no signature: see CheckChain.
func ReadSession(chain [][]byte) (*Session, error) {
	if len(chain) == 0 {
		return nil, errors.New("empty session chain")
	}
	s := &Session{Last: chain[len(chain)-1]}
	byHash := make(map[string]int)
	for i, r := range chain {
		obj, err := strictjson.ParseObject(r)
		if err == nil {
			err = strictjson.CheckFold(obj)
		}
		if err != nil {
			return nil, fmt.Errorf("receipt %d: %w", i+1, err)
		}
		pm, ok := obj["payload"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("receipt %d: payload is not an object", i+1)
		}
		var p payload
		if err := strictjson.Decode(pm, &p, strictjson.IgnoreUnknown); err != nil {
			return nil, fmt.Errorf("receipt %d: payload: %w", i+1, err)
		}
		hash, err := receipts.Hash(r)
		if err != nil {
			return nil, fmt.Errorf("receipt %d: %w", i+1, err)
		}
		if s.ID == "" {
			s.ID = p.SessionID
		}
		s.LastSequence = p.Sequence
		if p.Agent != "" {
			s.Agent = p.Agent
		}
		if p.Model != "" {
			s.Model = p.Model
		}
		step := receipts.Step{HookEvent: p.HookEvent, Decision: p.Decision, ToolName: p.ToolName}
		switch {
		case p.HookEvent == receipts.PreToolUse && p.ToolName != "":
			byHash[hash] = len(s.Calls)
			s.Calls = append(s.Calls, Call{CallIndex: len(s.Calls), ToolName: p.ToolName, InputHash: p.ToolInputHash,
				StartedAt: p.IssuedAt, Decision: p.Decision, ReceiptHash: hash})
			if p.PolicyDigest != "" && !contains(s.PolicyDigests, p.PolicyDigest) {
				s.PolicyDigests = append(s.PolicyDigests, p.PolicyDigest)
			}
		case step.IsExecution():
			j, ok := byHash[p.DecisionReceiptHash]
			if !ok || p.DecisionReceiptHash == "" || s.Calls[j].ExecutionReceiptHash != "" {
				s.Calls = append(s.Calls, Call{CallIndex: len(s.Calls), ToolName: p.ToolName, InputHash: p.ToolInputHash,
					OutputHash: p.ToolOutputHash, StartedAt: p.IssuedAt, DurationMs: p.ToolDurationMs,
					Decision: Ungated, ExecutionReceiptHash: hash})
				continue
			}
			c := &s.Calls[j]
			c.OutputHash, c.DurationMs, c.ExecutionReceiptHash = p.ToolOutputHash, p.ToolDurationMs, hash
		}
	}
	return s, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MarshalTranscript returns the transcript as the bytes a Trust Record
// commits to: the RFC 8785 (JCS) form of the JSON array of calls. Verifiers
// hash the bytes they are given, never a re-serialization.
func MarshalTranscript(calls []Call) ([]byte, error) {
	if calls == nil {
		calls = []Call{}
	}
	j, err := json.Marshal(calls)
	if err != nil {
		return nil, err
	}
	return strictjson.CanonicalizeJSON(j)
}

// ParseTranscript parses transcript bytes strictly: a JSON array of calls
// with no duplicate or unknown members, each named exactly (none that
// differs from another, or from a known name, only in case).
func ParseTranscript(data []byte) ([]Call, error) {
	v, err := strictjson.Parse(data)
	if err == nil {
		err = strictjson.CheckFold(v)
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errors.New("transcript: not a JSON array")
	}
	calls := make([]Call, len(arr))
	for i, e := range arr {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("transcript entry %d: not an object", i)
		}
		if err := strictjson.Decode(o, &calls[i], strictjson.DisallowUnknown); err != nil {
			return nil, fmt.Errorf("transcript entry %d: %w", i, err)
		}
	}
	return calls, nil
}
