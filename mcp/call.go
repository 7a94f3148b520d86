package mcp

import (
	"context"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/policy"
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
		ToolInputHash: ci.inputHash, Start: start, ProposalDigest: digest, ToolInput: c.input,
		Requests: []policy.Call{{Agent: r.agent, ToolName: ci.tool, ToolInput: c.input,
			Cwd: r.cfg.Gate.Store().Project(), MCP: mc}}}
	return r.decide(ctx, cm, ci, call)
}
