package telemetry

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/docketlog/docket/receipts"
)

// RelayCallPrefix begins the tool_use_id of every call the MCP relay
// decides ("jsonrpc:" and the request id): the relay exports those calls
// itself, so [Calls] leaves them out.
const RelayCallPrefix = "jsonrpc:"

// Calls gathers the receipts one `docket sync` proves into tool calls and
// records one span per call: a call that ran once its execution receipt
// is proven, a call that was denied once its decision is. A decision that
// may still be executed (an allow, a require_approval, an unenforced deny)
// waits for its execution, in this run or a later one. It is not safe for
// concurrent use.
type Calls struct {
	exp       *Exporter
	decisions map[string]*proven // by receipt hash, not yet paired
	execs     []*proven
}

type proven struct {
	p     receipts.Payload
	hash  string
	index int64
}

// Calls returns an empty set of proven receipts for e; nil when e is nil.
func (e *Exporter) Calls() *Calls {
	if e == nil {
		return nil
	}
	return &Calls{exp: e, decisions: map[string]*proven{}}
}

// Add notes one proven receipt (its JCS bytes as signed) and its leaf
// index. Receipts of no tool call, of the relay's calls, or that do not
// read, are ignored.
func (c *Calls) Add(receipt []byte, index uint64) {
	if c == nil {
		return
	}
	var env struct {
		Payload receipts.Payload `json:"payload"`
	}
	if json.Unmarshal(receipt, &env) != nil {
		return
	}
	p := env.Payload
	if p.ToolName == "" || strings.HasPrefix(p.ToolUseID, RelayCallPrefix) {
		return
	}
	hash, err := receipts.Hash(receipt)
	if err != nil {
		return
	}
	pr := &proven{p: p, hash: hash, index: int64(index)}
	step := receipts.Step{HookEvent: p.HookEvent, Decision: p.Decision, ToolName: p.ToolName, Unenforced: p.Enforced != nil && !*p.Enforced}
	switch {
	case step.IsExecution():
		c.execs = append(c.execs, pr)
	case p.HookEvent == receipts.PreToolUse:
		c.decisions[hash] = pr
	}
}

// Flush records the spans of the calls complete so far. decision finds a
// decision receipt proven by an earlier run (by session and hash) for an
// execution proven in this one; nil, or not found, and the span carries
// what the execution receipt says.
func (c *Calls) Flush(decision func(session, hash string) []byte) {
	if c == nil {
		return
	}
	for _, x := range c.execs {
		d := c.decisions[x.p.DecisionReceiptHash]
		delete(c.decisions, x.p.DecisionReceiptHash)
		if d == nil && decision != nil && x.p.DecisionReceiptHash != "" {
			if rec := decision(x.p.SessionID, x.p.DecisionReceiptHash); rec != nil {
				var env struct {
					Payload receipts.Payload `json:"payload"`
				}
				if json.Unmarshal(rec, &env) == nil {
					d = &proven{p: env.Payload, hash: x.p.DecisionReceiptHash, index: -1}
				}
			}
		}
		c.exp.Record(callOf(d, x))
	}
	c.execs = nil
	for h, d := range c.decisions {
		step := receipts.Step{HookEvent: d.p.HookEvent, Decision: d.p.Decision, ToolName: d.p.ToolName, Unenforced: d.p.Enforced != nil && !*d.p.Enforced}
		if step.Executable() {
			continue // its execution comes later
		}
		c.exp.Record(callOf(d, nil))
		delete(c.decisions, h)
	}
}

// callOf is the span of a call: its decision d (nil when not found) and
// its execution x (nil for a call that did not run).
func callOf(d, x *proven) ToolCall {
	c := ToolCall{Index: -1, ExecutionIndex: -1}
	first := x
	if d != nil {
		first = d
		c.Decision, c.Reason, c.PolicyIDs = d.p.Decision, d.p.Reason, d.p.PolicyIDs
		c.Unenforced = d.p.Enforced != nil && !*d.p.Enforced
		c.Receipt, c.Index = d.hash, d.index
	}
	c.Tool, c.CallID, c.Agent, c.Session = first.p.ToolName, first.p.ToolUseID, first.p.Agent, first.p.SessionID
	c.Start = issued(first.p)
	c.End = c.Start
	if d != nil && d.p.HookLatencyMs != nil {
		c.End = c.Start.Add(time.Duration(*d.p.HookLatencyMs) * time.Millisecond)
	}
	switch {
	case x != nil:
		if d == nil {
			c.Decision, c.Receipt = x.p.Decision, x.p.DecisionReceiptHash
		}
		c.Execution, c.ExecutionIndex = x.hash, x.index
		c.End = issued(x.p)
		if x.p.HookEvent == receipts.PostToolUseFailure {
			c.ErrorType = "tool_error"
			if x.p.Reason != "" {
				c.ErrorType = x.p.Reason
			}
		}
	default:
		c.ErrorType, c.ErrorMessage = "tool_error", "denied by Docket: "+c.Reason
	}
	return c
}

func issued(p receipts.Payload) time.Time {
	t, err := time.Parse(time.RFC3339Nano, p.IssuedAt)
	if err != nil {
		return time.Now()
	}
	return t
}
