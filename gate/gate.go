// Package gate is the agent gate of Docket (DESIGN §1, §3.1): it decides a
// tool call with the project's Cedar policy, signs the decision into the
// session's receipt chain, and records the execution of the call, linked
// to its decision, or a session's start and end.
//
// The gate knows nothing of an agent's protocol: package hook parses the
// agents' events, maps them to [Call] and [Event], and turns decisions into
// exit codes; package mcp's relay maps MCP requests the same way. Both are
// thin adapters over one gate, opened by [Open], and so share one
// fail-closed rule:
//
//   - What leaves nothing to sign with is an error, and no call runs: Open
//     fails when the issuer key cannot be loaded (the hook blocks with
//     exit 2, the relay exits 2, a post hook spools its event); Decide
//     fails when its ctx ends or the chain cannot be written (the hook
//     blocks, the relay answers a denial).
//   - What leaves the decision unknown is a signed deny: a policy that
//     does not load (or panics loading) makes every Decide a deny with
//     reason gate_error, and so do a call that maps to no request and a
//     request the policy cannot read (Call.Refusal for those the caller
//     refuses itself).
//   - What leaves the strict mode unknown turns it on: a configuration
//     that cannot be read makes every allow (and ask) wait for the log,
//     which, unconfigured, cannot take it, so the allow is replaced by a
//     signed deny with reason log_unavailable; a deny never waits.
//
// Nothing fails open: no failure of the gate lets a call run. Observe mode
// (observe.go) answers the policy's own denials and asks as allows, signed
// as not enforced; it never answers a failure of the gate so.
package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Gate decides and records the tool calls of one project. It is opened by
// [Open] and safe for concurrent use: calls of one session are appended to
// its chain in turn (the store's lock orders them, across processes too).
type Gate struct {
	store *store.Store
	key   ed25519.PrivateKey
	home  string
	// caller names the gate's user in the strict mode's deny.
	caller string
	// requireLog is the strict mode (store.Config.RequireLog, or a
	// configuration that could not be read): Decide returns an allow or
	// ask only once its receipt is in the log with a verified proof (and
	// the witness quorum, with a policy); when that cannot be had before
	// ctx's deadline (LogWait without one), it signs and returns a deny
	// with ReasonLogUnavailable.
	requireLog bool
	configErr  error
	// observe is observe mode (store.Config.Observe, observe.go); journal
	// keeps each call's input in the local journal (store.Config.Journal).
	observe, journal bool
	// salted commits to inputs with a per-call salt kept in the journal
	// (store.Config.InputCommitment) instead of tool_input_hash.
	salted bool

	// loaded is closed once engine and policyErr are set: the policy
	// loads on its own goroutine, started once by loadOnce (see Preload).
	// When it could not be loaded,
	// engine is nil and policyErr says why: every call is then denied, and
	// the deny is signed (reason gate_error).
	loadOnce  sync.Once
	loaded    chan struct{}
	engine    *policy.Engine
	policyErr error
}

// LogWait bounds the strict mode's wait when the caller's ctx has no
// deadline, and LogMargin is the part of a deadline kept for signing the
// deny when the log does not answer in time.
const (
	LogWait   = 10 * time.Second
	LogMargin = time.Second
)

// Call is a tool call to decide.
type Call struct {
	SessionID string
	// Agent is the agent's name in receipts (claude-code, gemini-cli, codex).
	Agent string
	// ToolName is the tool as the agent names it (recorded in receipts).
	ToolName  string
	ToolUseID string
	// ToolInputHash is "sha256:" + hex SHA-256 of JCS(tool_input).
	ToolInputHash string
	// Requests are what the policy decides: the call mapped to Claude Code
	// tool names and inputs, one or more; all of them must be allowed.
	Requests []policy.Call
	// Start is when handling the call started; hook_latency_ms is measured
	// from it. Zero means when Decide is called.
	Start time.Time
	// Model is the model the agent reported, if any (receipts' model).
	Model string
	// Refusal, when set, is the decision (a deny) without asking the
	// policy: the call could not be checked (the MCP gate's strict parse or
	// PIC verification failed). It is signed like any decision.
	Refusal *policy.Decision
	// ProposalDigest is the digest of the call's PIC proposal, if any.
	ProposalDigest string
	// ToolInput is JCS(tool_input), whose hash is ToolInputHash: kept in
	// the local journal when the project keeps one, never in a receipt.
	ToolInput []byte
}

// Decision is a signed decision.
type Decision struct {
	policy.Decision
	// PolicyDigest is the digest of the policy that decided, "" when the
	// policy could not be loaded.
	PolicyDigest string
	// Sequence is the decision receipt's place in the session chain.
	Sequence int64
	// Receipt is the signed decision receipt (JCS bytes) as appended.
	Receipt []byte
	// Unenforced is set when observe mode answers the decision, a deny or
	// an ask, as an allow; the receipt says "enforced": false. See Answer.
	Unenforced bool
}

// Decide decides a call with the policy, signs the decision and appends it
// to the session chain. A call is only allowed once its allow is recorded:
// any error (ctx ending, the chain that cannot be written) means the call
// must not run.
func (g *Gate) Decide(ctx context.Context, c Call) (Decision, error) {
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	eng, perr := g.policy(ctx)
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	var d Decision
	if eng != nil {
		d.PolicyDigest = eng.Digest()
	}
	switch {
	case c.Refusal != nil:
		d.Decision = *c.Refusal
		d.Decision.Decision = policy.Deny
	case perr != nil || eng == nil:
		if perr == nil {
			perr = errors.New("no policy loaded")
		}
		d.Decision = policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError,
			Message: fmt.Sprintf("policy: %v (fix it, then run docket policy check)", perr)}
	default:
		d.Decision = Evaluate(ctx, eng, c.Requests, g.store.Project(), g.home)
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	d.Unenforced = g.unenforced(c, d.Decision)
	d, err := g.record(c, d)
	if err != nil || !g.requireLog || c.Refusal != nil || d.Answer() == policy.Deny {
		return d, err
	}
	return g.publish(ctx, c, d)
}

// publish is the strict mode: it waits until the allow (or ask) d is in
// the log, or refuses the call.
func (g *Gate) publish(ctx context.Context, c Call, d Decision) (Decision, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(LogWait)
	}
	pctx, cancel := context.WithDeadline(ctx, deadline.Add(-LogMargin))
	defer cancel()
	err := g.store.Publish(pctx, c.SessionID, d.Sequence, d.Receipt, store.SyncOptions{MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, FailFast: true})
	if err == nil {
		return d, nil
	}
	caller := g.caller
	// No policy decided this deny: it carries no policy IDs.
	c.Refusal = &policy.Decision{Decision: policy.Deny, Reason: ReasonLogUnavailable,
		Message: fmt.Sprintf("the log could not record the allow decision before the %s's deadline: %v", caller, err)}
	if errors.Is(err, syscall.ECONNREFUSED) {
		c.Refusal.Message = fmt.Sprintf("the log refuses connections, so it cannot record the allow decision: %v", err)
	}
	return g.Decide(ctx, c)
}

// ReasonLogUnavailable is the reason of a deny the strict mode signs when
// the allow decision could not be put in the log in time.
const ReasonLogUnavailable = "log_unavailable"

// record signs decision d of call c and appends it to the session chain.
func (g *Gate) record(c Call, d Decision) (Decision, error) {
	if c.Start.IsZero() {
		c.Start = time.Now()
	}
	var opts store.AppendOptions
	if g.journal && c.ToolInput != nil {
		opts.Journal = &store.JournalEntry{ToolName: c.ToolName, ToolInput: c.ToolInput}
		if len(c.Requests) > 0 {
			opts.Journal.Cwd = c.Requests[0].Cwd
		}
	}
	var enforced *bool
	if d.Unenforced {
		enforced = new(bool)
	}
	inputHash, commitment := c.ToolInputHash, ""
	if g.salted && opts.Journal != nil {
		salt := make([]byte, receipts.SaltSize)
		rand.Read(salt)
		inputHash, commitment = "", receipts.InputCommitment(salt, c.ToolInput)
		opts.Journal.Salt = hex.EncodeToString(salt)
	}
	head, err := g.store.Append(c.SessionID, opts, func(l store.Link) ([]byte, error) {
		latency := time.Since(c.Start).Milliseconds()
		rec, err := receipts.Sign(g.key, receipts.Payload{
			Type:                receipts.TypeDecision,
			SessionID:           c.SessionID,
			Sequence:            l.Sequence,
			PreviousReceiptHash: l.Previous,
			IssuerSequence:      l.IssuerSequence,
			HookEvent:           receipts.PreToolUse,
			Agent:               c.Agent,
			ToolName:            c.ToolName,
			ToolUseID:           c.ToolUseID,
			ToolInputHash:       inputHash,
			ToolInputCommitment: commitment,
			Decision:            d.Decision.Decision,
			Reason:              d.Reason,
			PolicyDigest:        d.PolicyDigest,
			PolicyIDs:           d.PolicyIDs,
			HookLatencyMs:       &latency,
			ProposalDigest:      c.ProposalDigest,
			Model:               c.Model,
			Enforced:            enforced,
		})
		d.Receipt = rec
		return rec, err
	})
	if err != nil {
		return Decision{}, fmt.Errorf("recording the decision: %w", err)
	}
	d.Sequence = head.Sequence
	return d, nil
}

// Pending returns what an execution of the call d decided needs to link
// it (Event.Decision), as of now.
func (d Decision) Pending(toolName string) *store.Pending {
	return &store.Pending{Hash: receipts.ChainHash(d.Receipt), Decision: d.Decision.Decision, ToolName: toolName,
		IssuedAt: time.Now().UnixMilli(), Unenforced: d.Unenforced}
}

// Preview evaluates requests with the gate's policy as Decide would, and
// neither signs nor records anything: for what a caller shows before any
// call is made (the MCP relay's -hide-denied drops from tools/list the
// tools a call to which the policy always denies). A policy that did not
// load, or ctx ending first, is a deny. In observe mode a deny or ask that
// Decide would answer as an allow is previewed as that allow.
func (g *Gate) Preview(ctx context.Context, requests []policy.Call) policy.Decision {
	eng, err := g.policy(ctx)
	if err != nil || eng == nil {
		return policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError, Message: fmt.Sprintf("policy: %v", err)}
	}
	d := Evaluate(ctx, eng, requests, g.store.Project(), g.home)
	if g.unenforced(Call{}, d) {
		d.Decision = policy.Allow
	}
	return d
}

// Evaluate asks the policy about every request of a call, with the given
// project root and home directory. The strictest answer wins (deny over
// require_approval over allow); its policy IDs are those of every request
// that answered the same. A call with no requests is denied.
func Evaluate(ctx context.Context, eng *policy.Engine, requests []policy.Call, project, home string) policy.Decision {
	rank := func(d string) int {
		switch d {
		case policy.Allow:
			return 0
		case policy.RequireApproval:
			return 1
		}
		return 2
	}
	out := policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError, Message: "the call maps to no request"}
	var ids []string
	for i, c := range requests {
		c.ProjectDir, c.Home = project, home
		d := eng.Decide(ctx, c)
		if rank(d.Decision) == 2 {
			d.Decision = policy.Deny
		}
		switch {
		case i == 0 || rank(d.Decision) > rank(out.Decision):
			out, ids = d, slices.Clone(d.PolicyIDs)
		case rank(d.Decision) == rank(out.Decision):
			ids = append(ids, d.PolicyIDs...)
		}
	}
	slices.Sort(ids)
	out.PolicyIDs = slices.Compact(ids)
	return out
}

// Event is something that happened after a decision: a tool call ran
// (receipts.PostToolUse, receipts.PostToolUseFailure), or a session started
// or ended (receipts.SessionStart, receipts.SessionEnd).
type Event struct {
	HookEvent string
	SessionID string
	Agent     string
	// The call that ran, for executions; see Call.
	ToolName, ToolUseID, ToolInputHash string
	// ToolOutputHash is the same construction as ToolInputHash over the
	// tool's response or error.
	ToolOutputHash string
	// Start is when handling the event started. Zero means when Record is called.
	Start time.Time
	// Model is the model the agent reported, if any (receipts' model).
	Model string
	// Decision, for an execution, is the decision it executes when the
	// caller holds it (Decision.Pending); otherwise the chain is searched
	// for the latest unexecuted decision of the same call.
	Decision *store.Pending
	// Lifecycle, when set (and HookEvent is not), makes the receipt a
	// lifecycle receipt with this lifecycle_event that carries ToolName
	// and ToolOutputHash, e.g. receipts.LifecycleToolsList.
	Lifecycle string
	// TranscriptHash, on a SessionEnd, is the transcript_hash of the
	// agent's record the reconciliation read (package reconcile).
	TranscriptHash string
	// Confinement, for an execution, is the confinement the call ran
	// under, or "unconfined" where the project asked for one and the call
	// ran without (package confine).
	Confinement *receipts.Confinement
	// Reason, for an execution, replaces the receipt's reason (executed,
	// execution_failed), e.g. receipts.ReasonCancelled. An unlinked
	// execution keeps receipts.ReasonUnlinked.
	Reason string
}

// Recorded is what Record appended.
type Recorded struct {
	Sequence int64
	// Unlinked is set for an execution with no decision in the chain to
	// link to: the tool ran ungated. It is recorded as such
	// (receipts.ReasonUnlinked), never given an invented link.
	Unlinked bool
	Receipt  []byte
}

// Record signs an event into its session chain. An execution is linked to
// the latest decision of the same call that no execution links to yet
// (receipts.Step.Executes).
//
// An ended ctx does not stop Record: what happened after a decision is
// recorded, also while its caller shuts down (nothing after the gate is
// lost). Appending waits only on the local store.
func (g *Gate) Record(ctx context.Context, e Event) (Recorded, error) {
	if e.Start.IsZero() {
		e.Start = time.Now()
	}
	exec := receipts.Step{HookEvent: e.HookEvent, ToolName: e.ToolName}
	var opts store.AppendOptions
	if exec.IsExecution() {
		opts.Decision = e.Decision
		opts.Executes = e.ToolUseID
		if opts.Executes == "" {
			opts.Executes = store.CallKey(e.SessionID, e.ToolName, e.ToolInputHash)
		}
	}
	var r Recorded
	head, err := g.store.Append(e.SessionID, opts, func(l store.Link) ([]byte, error) {
		p := receipts.Payload{
			SessionID:           e.SessionID,
			Sequence:            l.Sequence,
			PreviousReceiptHash: l.Previous,
			IssuerSequence:      l.IssuerSequence,
			HookEvent:           e.HookEvent,
			Agent:               e.Agent,
			Model:               e.Model,
		}
		switch e.HookEvent {
		case receipts.SessionStart:
			p.Type, p.LifecycleEvent = receipts.TypeLifecycle, receipts.LifecycleSessionStart
		case receipts.SessionEnd:
			// The session's final sequence and head: the session_end is
			// its last receipt, and links the one before it.
			p.Type, p.LifecycleEvent = receipts.TypeLifecycle, receipts.LifecycleSessionEnd
			p.FinalSequence, p.HeadHash = l.Sequence, l.Previous
			p.TranscriptHash = e.TranscriptHash
		case "":
			if e.Lifecycle == "" {
				return nil, fmt.Errorf("recording an event with neither a hook event nor a lifecycle event")
			}
			p.Type, p.LifecycleEvent = receipts.TypeLifecycle, e.Lifecycle
			p.ToolName, p.ToolOutputHash = e.ToolName, e.ToolOutputHash
		default:
			p.Type = receipts.TypeDecision
			p.ToolName, p.ToolUseID = e.ToolName, e.ToolUseID
			p.ToolInputHash, p.ToolOutputHash = e.ToolInputHash, e.ToolOutputHash
			p.Confinement = e.Confinement
			if g.salted {
				// The execution links its decision; repeating the
				// unsalted hash would undo the decision's commitment.
				p.ToolInputHash = ""
			}
			p.Reason = receipts.ReasonExecuted
			if e.HookEvent == receipts.PostToolUseFailure {
				p.Reason = receipts.ReasonExecutionFailed
			}
			if e.Reason != "" {
				p.Reason = e.Reason
			}
			r.Unlinked = true
			if d := l.Decision; d != nil {
				exec.Decision = d.Decision
				r.Unlinked = !exec.Executes(receipts.Step{HookEvent: receipts.PreToolUse, Decision: d.Decision, ToolName: d.ToolName, Unenforced: d.Unenforced})
			}
			if r.Unlinked {
				p.Reason = receipts.ReasonUnlinked
			} else {
				p.Decision, p.DecisionReceiptHash = l.Decision.Decision, l.Decision.Hash
				if l.Decision.IssuedAt > 0 {
					dur := max(0, time.Now().UnixMilli()-l.Decision.IssuedAt)
					p.ToolDurationMs = &dur
				}
			}
		}
		latency := time.Since(e.Start).Milliseconds()
		p.HookLatencyMs = &latency
		rec, err := receipts.Sign(g.key, p)
		r.Receipt = rec
		return rec, err
	})
	if err != nil {
		return Recorded{}, err
	}
	r.Sequence = head.Sequence
	return r, nil
}
