package mcp

import (
	"context"
	"maps"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// gatedMethods are the client requests other than tools/call whose params
// a server resolves to files, URLs or other resources it reads: a
// resources/read or resources/subscribe of a file:// URI reads (or
// watches) that file, a prompts/get's arguments may name files the prompt
// embeds, and a completion/complete of a resource template's argument
// lists what is there. Relayed undecided, they would be a side door
// around the file rules that hold for tools/call. Each is decided by the
// gate as a call of the pseudo-tool mcp__<server>__<name> (so it sits in
// Action::"Mcp" and Action::"mcp__<server>" like the server's tools),
// whose input is the request's params without _meta; the policy turns a
// uri, a path or a URL in them into Read and WebFetch requests as for a
// tool's arguments. The names hold a ':', which MCP tool names do not
// (and the relay refuses a tools/call of one), so that a receipt tells a
// resource read from a tool call.
var gatedMethods = map[string]string{
	"resources/read":      "resources:read",
	"resources/subscribe": "resources:subscribe",
	"prompts/get":         "prompts:get",
	"completion/complete": "completion:complete",
}

// reservedTool reports whether a tool name is one of the pseudo-tools.
func reservedTool(name string) bool {
	for _, t := range gatedMethods {
		if name == t {
			return true
		}
	}
	return false
}

// readGated reads the params of a gated request (see gatedMethods).
func readGated(cm *clientMsg, rd *reading, tool string) (*clientMsg, *refusal) {
	c := &callMsg{name: tool}
	c.ci.method = cm.method
	c.ci.tool = tool
	no := func(why string) (*clientMsg, *refusal) {
		return nil, &refusal{why: why, rd: rd, call: &c.ci, id: cm.id}
	}
	if cm.id == nil {
		return no(cm.method + " without an id (a notification) is not relayed")
	}
	c.ci.toolUseID = "jsonrpc:" + string(cm.id)
	params, ok := cm.m["params"].(map[string]any)
	if !ok {
		return no(cm.method + " params is not an object")
	}
	c.args = maps.Clone(params)
	delete(c.args, "_meta")
	var err error
	if c.input, err = strictjson.Canonicalize(c.args); err != nil {
		return no(cm.method + " params: " + err.Error())
	}
	c.ci.inputHash = sha256Ref(c.input)
	cm.call = c
	return cm, nil
}

// gatedRequest decides a gated request (see gatedMethods) and relays it
// when allowed; a denial is a JSON-RPC error, since it is no tool call.
func (r *relay) gatedRequest(ctx context.Context, cm *clientMsg) error {
	start := time.Now()
	c := cm.call
	ci := c.ci
	ci.tool = "mcp__" + r.cfg.Server + "__" + c.name
	mc := &policy.MCPContext{ServerCommand: r.cmd, ServerInfo: r.info(), HighImpact: r.high[c.name] || r.high["*"]}
	call := gate.Call{SessionID: r.cfg.SessionID, Agent: r.agent, ToolName: ci.tool, ToolUseID: ci.toolUseID,
		ToolInputHash: ci.inputHash, Start: start, ToolInput: c.input,
		Requests: []policy.Call{{Agent: r.agent, ToolName: ci.tool, ToolInput: c.input,
			Cwd: r.cfg.Gate.Store().Project(), MCP: mc}}}
	return r.decide(ctx, cm, ci, call)
}

// decide decides a call (a tools/call or a gated request) with the gate
// and forwards it when allowed; otherwise it answers the denial.
func (r *relay) decide(ctx context.Context, cm *clientMsg, ci callInfo, call gate.Call) error {
	id := cm.id
	// The flight is registered before the decision, so that the id cannot
	// be reused meanwhile; it answers nothing until it is forwarded, and
	// is removed on deny: a response to a denied call is dropped.
	key := string(id)
	f := &flight{method: cm.method, tool: ci.tool, toolUseID: ci.toolUseID, inputHash: ci.inputHash}
	if err := r.flights.add(key, f); err != nil {
		r.refuseCall(ctx, id, false, ci, err.Error(), "")
		return nil
	}
	var d gate.Decision
	err := r.append(func() error {
		var err error
		d, err = r.cfg.Gate.Decide(ctx, call)
		return err
	})
	span := r.span(cm.method, id, ci, call.Start)
	// In observe mode a deny or ask the policy gave is answered as an
	// allow (gate.Decision.Answer); its receipt says it was not enforced.
	if err != nil || d.Answer() != policy.Allow {
		r.flights.remove(key)
		if err != nil {
			r.log.Error("mcp: deciding a call failed; denied", "tool", ci.tool, "err", err)
			dec := policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError,
				Message: "the decision could not be recorded: " + err.Error()}
			r.answerDeny(id, ci, dec, "")
			r.spanDenied(span, dec, "")
			return nil
		}
		r.log.Info("mcp: call denied", "tool", ci.tool, "decision", d.Decision.Decision, "policy_ids", d.PolicyIDs)
		hash, _ := receipts.Hash(d.Receipt)
		r.answerDeny(id, ci, d.Decision, hash)
		r.spanDenied(span, d.Decision, hash)
		return nil
	}
	r.log.Debug("mcp: call allowed", "tool", ci.tool, "policy_ids", d.PolicyIDs)
	if span != nil {
		span.Decision, span.Reason, span.PolicyIDs, span.Unenforced = d.Decision.Decision, d.Reason, d.PolicyIDs, d.Unenforced
		span.Receipt, _ = receipts.Hash(d.Receipt)
		f.span = span // read by record once the response came, after forward
	}
	// The execution receipt links this decision directly, without reading
	// the chain back for it, however many calls are in flight.
	return r.forward(id, d.Pending(ci.tool), cm.line)
}
