// Package hook implements `docket hook`: the agent hooks that gate every
// tool call with the Cedar policy and sign every decision and execution into
// the session's receipt chain (DESIGN §1, §3.1, §5).
//
// It speaks the hook protocols of Claude Code (JSON on stdin; exit 2 with a
// reason on stderr blocks; a hookSpecificOutput.permissionDecision "ask"
// answer on stdout asks the user), Gemini CLI (BeforeTool, AfterTool,
// SessionStart, SessionEnd; exit 2 blocks) and Codex (PreToolUse,
// PostToolUse, SessionStart; exit 2 blocks), mapping the other agents' tool
// names and inputs to Claude Code's before the policy sees them.
//
// These agents fail open: a hook that crashes, times out or exits 1 lets the
// tool run. So the pre hook fails closed: every failure — empty, oversized or
// malformed input, a missing or broken policy, a missing key, a receipt that
// cannot be recorded, the internal deadline, a panic — ends in exit 2 with a
// one-line reason on stderr. The post and session hooks cannot block: their
// failures never exit 2; the event is kept in .docket/spool, a warning is
// printed (exit 1), and the next successful hook receipts it.
//
// The hooks never wait on the network: receipts are appended to the local
// store, and when a log is configured a detached `docket sync` submits them.
package hook

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// DefaultDeadline bounds the pre hook. It must stay below the timeout the
// agent is configured with (docket init writes 30 s), because an agent that
// times a hook out lets the call run.
const DefaultDeadline = 10 * time.Second

// Exit codes of `docket hook`.
const (
	ExitOK      = 0 // pre: allowed (or the user is asked); others: receipted
	ExitWarning = 1 // post, post-failure, session-*: event spooled, not yet receipted
	ExitBlock   = 2 // pre: denied, or the gate failed (fail closed)
)

// Options configure one hook run.
type Options struct {
	// Store is the project's .docket store.
	Store *store.Store
	Agent Agent
	Kind  Kind
	// Home is the user's home directory, for "~" in policies.
	Home string
	// Start is when the hook process started; hook_latency_ms is measured
	// from it. Zero means when Run was called.
	Start time.Time
	// Deadline bounds the pre hook; zero means DefaultDeadline.
	Deadline time.Duration
	// Logger receives at most one line per run, never tool arguments or
	// keys. Nil discards.
	Logger *slog.Logger
	// StartSync, if set, is called after a post or session hook appended a
	// receipt and a log is configured. It must return at once (start a
	// detached `docket sync`), never wait on the network.
	StartSync func(*store.Store)
	// Prepared, if set, is the loading of Store's policy and key, started
	// earlier by Prepare; otherwise the pre hook starts it itself.
	Prepared *Prepared
	// Fault, if set, is called at named points of the pre hook ("decide");
	// tests use it to inject panics and delays.
	Fault func(point string)
}

// Run runs one hook: it reads the agent's event from stdin, answers on
// stdout and stderr as the agent's protocol wants, and returns the exit
// code. For Pre, every failure returns ExitBlock.
func Run(ctx context.Context, opts Options, stdin io.Reader, stdout, stderr io.Writer) int {
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Kind == Pre {
		return runPre(ctx, opts, stdin, stdout, stderr)
	}
	return runRecord(opts, stdin, stderr)
}

// answer is what the pre hook tells the agent.
type answer struct {
	code   int
	stdout []byte
	msg    string // one line for stderr
}

func block(format string, args ...any) answer {
	return answer{code: ExitBlock, msg: fmt.Sprintf(format, args...)}
}

// runPre is the fail-closed wrapper around pre: a deadline, a recovered
// panic and every error become exit 2 with one line on stderr.
func runPre(ctx context.Context, opts Options, stdin io.Reader, stdout, stderr io.Writer) int {
	deadline := opts.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- block("gate error: internal error (panic: %.200v); the call is blocked", r)
			}
		}()
		done <- pre(ctx, opts, stdin)
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		if cause := context.Cause(ctx); errors.Is(cause, context.DeadlineExceeded) {
			a = block("gate error: internal deadline of %v exceeded (%v); the call is blocked", deadline, cause)
		} else {
			a = block("gate error: stopped before deciding (%v); the call is blocked", cause)
		}
	}
	if len(a.stdout) > 0 {
		if _, err := stdout.Write(a.stdout); err != nil {
			a = block("gate error: writing the answer: %v", err)
		}
	}
	if a.msg != "" {
		fmt.Fprintf(stderr, "docket: %s\n", oneLine(a.msg))
	}
	return a.code
}

// Prepared is the slow part of a pre hook, loading the policy and the
// issuer key, running in the background; see [Prepare].
type Prepared struct {
	store  *store.Store
	policy chan loadedPolicy
	key    chan loadedKey
}

type loadedPolicy struct {
	eng *policy.Engine
	err error
}

type loadedKey struct {
	key ed25519.PrivateKey
	err error
}

// Prepare starts loading the store's policy and issuer key, each on its own
// goroutine. A pre hook process calls it as early as it knows the project,
// so that the loads overlap everything else it does before deciding; pass
// the result in [Options].Prepared. A panic while loading becomes an error.
func Prepare(s *store.Store) *Prepared {
	p := &Prepared{store: s, policy: make(chan loadedPolicy, 1), key: make(chan loadedKey, 1)}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.policy <- loadedPolicy{err: fmt.Errorf("panic loading policy: %.200v", r)}
			}
		}()
		eng, err := LoadPolicy(s)
		p.policy <- loadedPolicy{eng, err}
	}()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.key <- loadedKey{err: fmt.Errorf("panic loading the key: %.200v", r)}
			}
		}()
		key, err := receipts.LoadPrivateKey(s.KeyPath())
		p.key <- loadedKey{key, err}
	}()
	return p
}

// pre decides one call, signs the decision into the chain and answers.
func pre(ctx context.Context, opts Options, stdin io.Reader) answer {
	// Loading the policy (parsing Cedar) and the key are the slow steps:
	// they overlap reading and parsing the event.
	prep := opts.Prepared
	if prep == nil || prep.store != opts.Store {
		prep = Prepare(opts.Store)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
	if err != nil {
		return block("gate error: reading hook input: %v; the call is blocked", err)
	}
	ev, err := ParseEvent(opts.Agent, Pre, data, opts.Store.Project)
	if err != nil {
		return block("gate error: %v; the call is blocked", err)
	}
	var lk loadedKey
	select {
	case lk = <-prep.key:
	case <-ctx.Done():
		return block("gate error: internal deadline exceeded loading the key; the call is blocked")
	}
	key, err := lk.key, lk.err
	if err != nil {
		return block("gate error: issuer key: %v; the call is blocked (run docket init)", err)
	}
	var d policy.Decision
	var digest string
	var l loadedPolicy
	select {
	case l = <-prep.policy:
	case <-ctx.Done():
		return block("gate error: internal deadline exceeded loading the policy; the call is blocked")
	}
	eng, err := l.eng, l.err
	if err != nil {
		d = policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError,
			Message: fmt.Sprintf("policy: %v (fix it, then run docket policy check)", err)}
	} else {
		digest = eng.Digest()
		d = Decide(ctx, eng, ev, opts.Store.Project, opts.Home)
	}
	if opts.Fault != nil {
		opts.Fault("decide")
	}
	if err := ctx.Err(); err != nil {
		return block("gate error: internal deadline exceeded; the call is blocked")
	}

	head, err := opts.Store.Append(ev.SessionID, store.AppendOptions{}, func(l store.Link) ([]byte, error) {
		latency := time.Since(opts.Start).Milliseconds()
		return receipts.Sign(key, receipts.Payload{
			Type:                receipts.TypeDecision,
			SessionID:           ev.SessionID,
			Sequence:            l.Sequence,
			PreviousReceiptHash: l.Previous,
			HookEvent:           Pre.HookEvent(),
			Agent:               opts.Agent.ReceiptName(),
			ToolName:            ev.ToolName,
			ToolUseID:           ev.ToolUseID,
			ToolInputHash:       ev.ToolInputHash,
			Decision:            d.Decision,
			Reason:              d.Reason,
			PolicyDigest:        digest,
			PolicyIDs:           d.PolicyIDs,
			HookLatencyMs:       &latency,
		})
	})
	if err != nil {
		return block("gate error: recording the decision: %v; the call is blocked", err)
	}
	opts.Logger.Info("hook pre", "session", ev.SessionID, "sequence", head.Sequence, "tool", ev.ToolName,
		"decision", d.Decision, "reason", d.Reason, "latency", time.Since(opts.Start))

	switch d.Decision {
	case policy.Allow:
		// No output: an explicit "allow" would skip the agent's own permission checks.
		return answer{code: ExitOK}
	case policy.RequireApproval:
		if opts.Agent == Claude {
			return answer{code: ExitOK, stdout: askAnswer(d)}
		}
		return block("approval required but %s hooks cannot ask: %s", opts.Agent, d.Message)
	}
	return block("denied: %s [%s%s]", d.Message, d.Reason, idList(d.PolicyIDs))
}

// Decide asks the policy about every call a pre event maps to, with the
// given project root and home directory. The strictest answer wins (deny
// over require_approval over allow); its policy IDs are those of every call
// that answered the same. An event with no calls is denied.
func Decide(ctx context.Context, eng *policy.Engine, ev *Event, project, home string) policy.Decision {
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
	for i, c := range ev.Calls {
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

// askAnswer is Claude Code's PreToolUse answer that asks the user.
func askAnswer(d policy.Decision) []byte {
	b, _ := json.Marshal(map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":            "PreToolUse",
			"permissionDecision":       "ask",
			"permissionDecisionReason": "docket: " + oneLine(d.Message),
		},
	})
	return append(b, '\n')
}

func idList(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ": " + strings.Join(ids, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// runRecord runs a hook that cannot block (post, post-failure, session-*):
// it receipts the event, or spools it and warns.
func runRecord(opts Options, stdin io.Reader, stderr io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
	if err == nil {
		err = record(opts, data)
	}
	if err != nil {
		name, serr := opts.Store.Spool(string(opts.Agent), string(opts.Kind), data)
		if serr != nil {
			fmt.Fprintf(stderr, "docket: warning: %s event not receipted (%v) and could not be spooled: %v\n", opts.Kind, oneLine(err.Error()), serr)
		} else {
			fmt.Fprintf(stderr, "docket: warning: %s event not receipted (%v); kept in %s\n", opts.Kind, oneLine(err.Error()), name)
		}
		opts.Logger.Warn("hook event spooled", "hook", string(opts.Kind), "err", err)
		return ExitWarning
	}
	if n, err := opts.Store.DrainSpool(maxDrain, opts.receiptSpooled); err != nil {
		fmt.Fprintf(stderr, "docket: warning: spooled events: %v\n", oneLine(err.Error()))
	} else if n > 0 {
		opts.Logger.Info("spooled events receipted", "count", n)
	}
	if opts.StartSync != nil {
		if cfg, err := opts.Store.LoadConfig(); err != nil {
			fmt.Fprintf(stderr, "docket: warning: %v\n", oneLine(err.Error()))
		} else if cfg.HasLog() {
			opts.StartSync(opts.Store)
		}
	}
	return ExitOK
}

// record signs the execution or lifecycle receipt of one event.
func record(opts Options, data []byte) error {
	ev, err := ParseEvent(opts.Agent, opts.Kind, data, opts.Store.Project)
	if err != nil {
		return err
	}
	key, err := receipts.LoadPrivateKey(opts.Store.KeyPath())
	if err != nil {
		return fmt.Errorf("issuer key: %w", err)
	}
	var aopts store.AppendOptions
	if opts.Kind == Post || opts.Kind == PostFailure {
		aopts.Executes = ev.CallKey()
	}
	var unlinked bool
	head, err := opts.Store.Append(ev.SessionID, aopts, func(l store.Link) ([]byte, error) {
		p := receipts.Payload{
			SessionID:           ev.SessionID,
			Sequence:            l.Sequence,
			PreviousReceiptHash: l.Previous,
			HookEvent:           opts.Kind.HookEvent(),
			Agent:               opts.Agent.ReceiptName(),
		}
		switch opts.Kind {
		case SessionStart, SessionEnd:
			p.Type = receipts.TypeLifecycle
			p.LifecycleEvent = strings.ReplaceAll(string(opts.Kind), "-", "_")
		default:
			p.Type = receipts.TypeDecision
			p.ToolName, p.ToolUseID = ev.ToolName, ev.ToolUseID
			p.ToolInputHash, p.ToolOutputHash = ev.ToolInputHash, ev.ToolOutputHash
			p.Reason = "executed"
			if opts.Kind == PostFailure {
				p.Reason = "execution_failed"
			}
			if d := l.Decision; d != nil {
				p.Decision, p.DecisionReceiptHash = d.Decision, d.Hash
				if d.IssuedAt > 0 {
					dur := max(0, time.Now().UnixMilli()-d.IssuedAt)
					p.ToolDurationMs = &dur
				}
			} else {
				// The tool ran without a decision of the gate in this chain:
				// record that, do not invent a link.
				p.Reason, unlinked = "unlinked_execution", true
			}
		}
		latency := time.Since(opts.Start).Milliseconds()
		p.HookLatencyMs = &latency
		return receipts.Sign(key, p)
	})
	if err != nil {
		return err
	}
	if unlinked {
		opts.Logger.Warn("execution without a decision", "session", ev.SessionID, "sequence", head.Sequence, "tool", ev.ToolName)
	}
	opts.Logger.Info("hook "+string(opts.Kind), "session", ev.SessionID, "sequence", head.Sequence)
	return nil
}

// maxDrain bounds the spooled events one hook run receipts.
const maxDrain = 32

// Receipter returns the function that receipts a spooled event for
// [store.Store.DrainSpool] and [store.SyncOptions]: the post or session
// hook the agent ran, again. An event that can never be receipted (bad
// input) is rejected; one of an unknown agent or hook is skipped.
func Receipter(s *store.Store, home string) func(store.SpooledEvent) error {
	opts := Options{Store: s, Home: home, Start: time.Now(), Logger: slog.New(slog.DiscardHandler)}
	return opts.receiptSpooled
}

func (opts Options) receiptSpooled(ev store.SpooledEvent) error {
	agent, aerr := ParseAgent(ev.Agent)
	kind, kerr := ParseKind(ev.Kind)
	if aerr != nil || kerr != nil || kind == Pre {
		return store.ErrSpoolSkip
	}
	opts.Agent, opts.Kind = agent, kind
	err := record(opts, ev.Data)
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		return fmt.Errorf("%w: %w", store.ErrSpoolReject, err)
	}
	return err
}

// schemaHash identifies the agent schema policies are validated against.
var schemaHash = sha256Ref(policy.Schema)

// LoadPolicy loads the store's policy: every *.cedar file directly in its
// policy directory, in name order. Validating the policies against the
// schema is the slowest part of loading them, so a policy set already
// validated against this schema (recorded in the store by a previous load)
// is not validated again, and neither are the requests built for it (Docket
// builds them to the schema itself). Parsing, @id checks and deny-on-error
// still run every time, so a policy that errors still denies.
func LoadPolicy(s *store.Store) (*policy.Engine, error) {
	var o policy.Options
	mark, _ := os.ReadFile(s.PolicyValidatedPath())
	if digest, schema, ok := strings.Cut(strings.TrimSpace(string(mark)), " "); ok && schema == schemaHash {
		o.ValidatedDigest = digest
	}
	eng, err := o.LoadDir(s.PolicyDir())
	if err == nil && eng.Digest() != o.ValidatedDigest {
		// Best effort: without the record the next load validates again.
		_ = os.WriteFile(s.PolicyValidatedPath(), []byte(eng.Digest()+" "+schemaHash+"\n"), 0o600)
	}
	return eng, err
}
