package mcp

import (
	"context"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
)

// toolsCall decides a tools/call and relays it when allowed.
func (r *relay) toolsCall(ctx context.Context, cm *clientMsg) error {
	start := time.Now()
	c, id := cm.call, cm.id
	ci, name, args := c.ci, c.name, c.args
	ci.tool = "mcp__" + r.cfg.Server + "__" + name
	if !r.tools.isListed() {
		if why := r.fetchTools(ctx, cm.m["params"].(map[string]any)); why != "" {
			r.refuseCall(ctx, id, false, ci, why, "")
			return nil
		}
		if why := r.tools.checkArguments(name, args); why != "" {
			r.refuseCall(ctx, id, false, ci, "the tools/call message was not relayed: parsers read the arguments differently: "+why, "")
			return nil
		}
	}
	mc := &policy.MCPContext{ServerCommand: r.cmd, ServerInfo: r.info(), HighImpact: r.high[name] || r.high["*"]}
	mc.InputSchema = r.inputSchema(name)
	var digest string
	if c.hasPIC {
		mc.PIC.Present = true
		res, err := pic.VerifyValue(ctx, c.proposal, pic.Options{Tool: name, Args: args,
			EvidenceRoot: r.cfg.EvidenceRoot, Keys: r.cfg.Keys, Limits: r.cfg.PICLimits})
		if err != nil {
			r.refuseCall(ctx, id, false, ci, "PIC proposal refused: "+err.Error(), "")
			return nil
		}
		mc.PIC.Verified, mc.PIC.Impact, mc.PIC.Trusted, digest = true, res.Impact, res.Trusted, res.Digest
	}
	call := gate.Call{SessionID: r.cfg.SessionID, Agent: r.agent, ToolName: ci.tool, ToolUseID: ci.toolUseID,
		ToolInputHash: ci.inputHash, Start: start, ProposalDigest: digest,
		Requests: []policy.Call{{Agent: r.agent, ToolName: ci.tool, ToolInput: c.input,
			Cwd: r.cfg.Gate.Store().Project, MCP: mc}}}
	// The flight is registered before the decision, so that the id cannot
	// be reused meanwhile; it answers nothing until it is forwarded, and
	// is removed on deny: a response to a denied call is dropped.
	key := string(id)
	if err := r.flights.add(key, &flight{method: "tools/call", tool: ci.tool, toolUseID: ci.toolUseID, inputHash: ci.inputHash}); err != nil {
		r.refuseCall(ctx, id, false, ci, err.Error(), "")
		return nil
	}
	var d gate.Decision
	err := r.append(func() error {
		var err error
		d, err = r.cfg.Gate.Decide(ctx, call)
		return err
	})
	if err != nil || d.Decision.Decision != policy.Allow {
		r.flights.remove(key)
		if err != nil {
			r.log.Error("mcp: deciding a call failed; denied", "tool", ci.tool, "err", err)
			r.answerDeny(id, ci, policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError,
				Message: "the decision could not be recorded: " + err.Error()}, "")
			return nil
		}
		r.log.Info("mcp: call denied", "tool", ci.tool, "decision", d.Decision.Decision, "policy_ids", d.PolicyIDs)
		hash, _ := receipts.Hash(d.Receipt)
		r.answerDeny(id, ci, d.Decision, hash)
		return nil
	}
	r.log.Debug("mcp: call allowed", "tool", ci.tool, "policy_ids", d.PolicyIDs)
	// The execution receipt links this decision directly, without reading
	// the chain back for it, however many calls are in flight.
	return r.forward(id, d.Pending(ci.tool), cm.line)
}
