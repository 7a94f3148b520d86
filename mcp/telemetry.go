package mcp

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/telemetry"
)

// span starts the span of a tools/call the relay decides (nil for other
// requests, or without Config.Telemetry): the MCP client span's
// attributes, the GenAI execute_tool span's, and Docket's session.
func (r *relay) span(method string, id []byte, ci callInfo, start time.Time) *telemetry.ToolCall {
	if r.cfg.Telemetry == nil || ci.method != "" || (method != "" && method != "tools/call") {
		return nil
	}
	if start.IsZero() {
		start = time.Now()
	}
	protocol := ci.protocol
	if protocol == "" {
		r.infoMu.Lock()
		protocol = r.protocol
		r.infoMu.Unlock()
	}
	return &telemetry.ToolCall{
		Tool: strings.TrimPrefix(ci.tool, "mcp__"+r.cfg.Server+"__"), DocketTool: ci.tool, CallID: ci.toolUseID,
		Agent: r.agent, Session: r.cfg.SessionID, Method: "tools/call", RequestID: requestID(id),
		Server: r.cfg.Server, Protocol: protocol, Relay: true, Index: -1, ExecutionIndex: -1, Start: start,
	}
}

// spanDenied ends the span of a call that did not run: the client got an
// isError result (or an error), error.type tool_error.
func (r *relay) spanDenied(s *telemetry.ToolCall, d policy.Decision, receiptHash string) {
	if s == nil {
		return
	}
	s.Decision, s.Reason, s.PolicyIDs, s.Receipt = d.Decision, d.Reason, d.PolicyIDs, receiptHash
	s.ErrorType, s.ErrorMessage = "tool_error", "denied by Docket: "+d.Reason
	s.End = time.Now()
	r.cfg.Telemetry.Record(*s)
}

// requestID is jsonrpc.request.id: the id as a string, a string id
// without its quotes; "" for none.
func requestID(id []byte) string {
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	var s string
	if id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}
