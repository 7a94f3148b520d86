package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// callInfo is what a decided tools/call is recorded as.
type callInfo struct {
	tool, toolUseID, inputHash string
	// stateless is set for a request of protocol 2026-07-28 or later
	// (it names its version in _meta), whose results carry resultType.
	stateless bool
	// protocol is the protocol version such a request names.
	protocol string
	// method is the request's method when it is not a tools/call but a
	// gated request (gatedMethods): its denial is a JSON-RPC error.
	method string
}

// refuseCall signs a deny for a call the policy was not asked about (it
// could not be read, or its proposal did not verify) and answers it: with
// the denial when it has an id, with Invalid Request and id null when its
// id is unusable (hasID), and not at all for a notification.
func (r *relay) refuseCall(ctx context.Context, id []byte, hasID bool, ci callInfo, msg, digest string) {
	if ci.tool == "" {
		ci.tool = "mcp__" + r.cfg.Server + "__"
	}
	d := policy.Decision{Decision: policy.Deny, Reason: policy.ReasonInvalidInput, Message: msg}
	var dec gate.Decision
	err := r.append(func() error {
		var err error
		dec, err = r.cfg.Gate.Decide(ctx, gate.Call{SessionID: r.cfg.SessionID, Agent: r.agent, ToolName: ci.tool,
			ToolUseID: ci.toolUseID, ToolInputHash: ci.inputHash, Refusal: &d, ProposalDigest: digest})
		return err
	})
	hash := ""
	if err != nil {
		r.log.Error("mcp: recording a refusal failed", "err", err)
	} else {
		hash, _ = receipts.Hash(dec.Receipt)
	}
	r.log.Info("mcp: call refused", "tool", ci.tool, "reason", d.Reason)
	r.spanDenied(r.span("", id, ci, time.Time{}), d, hash)
	switch {
	case id != nil:
		r.answerDeny(id, ci, d, hash)
	case hasID:
		r.replyError(nil, codeInvalidRequest, "docket mcp: "+msg)
	}
}

// answerDeny answers a denied call: a tool result with isError (the model
// reads why and does not loop), or under DenyAsError, and for a gated
// request that is no tool call, a JSON-RPC error in the
// implementation-defined range. Never a "malformed request" code.
func (r *relay) answerDeny(id []byte, ci callInfo, d policy.Decision, receiptHash string) {
	verdict := "denied"
	if d.Decision == policy.RequireApproval {
		verdict = "needs approval, which docket mcp cannot ask for, so it was denied"
	}
	what := "tool call"
	if ci.method != "" {
		what = ci.method + " request"
	}
	text := "Docket " + verdict + " this " + what + "; it was not run."
	if d.Message != "" {
		text += " Reason: " + d.Message + "."
	} else if d.Reason != "" {
		text += " Reason: " + d.Reason + "."
	}
	if len(d.PolicyIDs) > 0 {
		text += " Policy: " + strings.Join(d.PolicyIDs, ", ") + "."
	}
	if receiptHash != "" {
		text += " Receipt: " + receiptHash + "."
	}
	text += " The same call will be denied again; ask the user to change the policy or the call."
	ids := d.PolicyIDs
	if ids == nil {
		ids = []string{}
	}
	meta := map[string]any{MetaDecision: "deny", MetaPolicyIDs: ids}
	if receiptHash != "" {
		meta[MetaReceipt] = receiptHash
	}
	var msg any
	if r.cfg.DenyAsError || ci.method != "" {
		e := errorObject(DeniedCode, text)
		e["data"] = meta
		msg = map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": e}
	} else {
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true, "_meta": meta}
		if ci.stateless {
			result["resultType"] = "complete"
		}
		msg = map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": result}
	}
	r.writeClient(msg)
}

// replyError answers a message that is not relayed with a JSON-RPC error
// (id nil: JSON null).
func (r *relay) replyError(id []byte, code int, message string) {
	r.clientMu.Lock()
	defer r.clientMu.Unlock()
	if _, err := r.client.Write(errorLine(id, code, message)); err != nil {
		r.log.Error("mcp: writing to the client", "err", err)
	}
}

// errorObject is a JSON-RPC error object.
func errorObject(code int, message string) map[string]any {
	return map[string]any{"code": code, "message": message}
}

// errorLine is a JSON-RPC error response as a line (id nil: JSON null).
func errorLine(id []byte, code int, message string) []byte {
	idv := json.RawMessage("null")
	if id != nil {
		idv = id
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": idv, "error": errorObject(code, message)})
	return append(b, '\n')
}

func (r *relay) writeClient(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		r.log.Error("mcp: encoding an answer", "err", err)
		return
	}
	r.clientMu.Lock()
	defer r.clientMu.Unlock()
	if _, err := r.client.Write(append(b, '\n')); err != nil {
		r.log.Error("mcp: writing to the client", "err", err)
	}
}
