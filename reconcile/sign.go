package reconcile

import (
	"crypto/ed25519"
	"fmt"
	"strings"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// A Session is one session chain of a store to reconcile, and the key that
// signs into it.
type Session struct {
	Store *store.Store
	Key   ed25519.PrivateKey
	// ID is the session's id (session_id), Agent the agent's name in
	// receipts (Claude, Gemini, Codex).
	ID, Agent string
}

// Chain returns the payloads of the session's chain, in order.
func (s Session) Chain() ([]receipts.Payload, error) {
	raw, err := s.Store.Receipts(s.ID)
	if err != nil {
		return nil, err
	}
	out := make([]receipts.Payload, 0, len(raw))
	for i, r := range raw {
		rc, err := receipts.Open(r, nil)
		if err != nil {
			return nil, fmt.Errorf("session %q receipt %d: %w", s.ID, i+1, err)
		}
		out = append(out, rc.Payload)
	}
	return out, nil
}

// Reconcile matches the record's calls with the session's chain (Match)
// and signs an unmediated_call receipt into the chain for each call no
// receipt accounts for, in the record's order. It returns those calls. It
// is idempotent: a call reported once is accounted for by its receipt the
// next time (a reconciliation at Stop, then at SessionEnd).
//
// Reconcile reads the chain, then appends: a decision appended in between
// by a hook running at the same time is not seen. It runs when the agent
// is idle (Stop, SessionEnd) or after the session (docket reconcile).
func (s Session) Reconcile(rec *Record) ([]Call, error) {
	chain, err := s.Chain()
	if err != nil {
		return nil, fmt.Errorf("reconciling: %w", err)
	}
	for _, c := range rec.Calls {
		if c.Server() != "" {
			relayed, err := s.relayed()
			if err != nil {
				return nil, fmt.Errorf("reconciling: %w", err)
			}
			chain = append(chain, relayed...)
			break
		}
	}
	missing := Match(rec.Calls, chain)
	for _, c := range missing {
		if err := s.sign(c); err != nil {
			return nil, fmt.Errorf("reconciling: %w", err)
		}
	}
	return missing, nil
}

// relayed returns the decisions docket mcp signed in the store's other
// chains (MCP tools, mcp__<server>__<tool>, decided by a relay rather than
// an agent's hook), without their ids: an MCP call of the agent's record
// that went through docket mcp matches one by tool name and input hash.
func (s Session) relayed() ([]receipts.Payload, error) {
	names, err := s.Store.Sessions()
	if err != nil {
		return nil, err
	}
	var out []receipts.Payload
	for _, name := range names {
		if name == store.SessionName(s.ID) {
			continue
		}
		chain, err := Session{Store: s.Store, ID: name}.Chain()
		if err != nil {
			return nil, err
		}
		for _, p := range chain {
			if p.HookEvent == receipts.PreToolUse && strings.HasPrefix(p.ToolName, "mcp__") &&
				p.Agent != Claude && p.Agent != Gemini && p.Agent != Codex {
				p.ToolUseID = ""
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// sign appends the unmediated_call receipt of c to the session chain.
func (s Session) sign(c Call) error {
	ran := c.Ran
	_, err := s.Store.Append(s.ID, store.AppendOptions{}, func(l store.Link) ([]byte, error) {
		return receipts.Sign(s.Key, receipts.Payload{
			Type:                receipts.TypeDecision,
			SessionID:           s.ID,
			Sequence:            l.Sequence,
			PreviousReceiptHash: l.Previous,
			IssuerSequence:      l.IssuerSequence,
			HookEvent:           receipts.UnmediatedCall,
			Agent:               s.Agent,
			ToolName:            c.Tool,
			ToolUseID:           c.ID,
			ToolInputHash:       c.InputHash,
			ToolOutputHash:      c.OutputHash,
			Reason:              receipts.ReasonNoDecision,
			TranscriptPosition:  c.Position,
			ToolRan:             &ran,
		})
	})
	return err
}
