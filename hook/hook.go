// Package hook implements `docket hook`: the agent hooks that put every
// tool call through the gate (package gate: decide with the Cedar policy,
// sign every decision and execution into the session's receipt chain) and
// answer the agent (DESIGN §1, §3.1, §5).
//
// It speaks the hook protocols of Claude Code (JSON on stdin; exit 2 with a
// reason on stderr blocks; a hookSpecificOutput.permissionDecision "ask"
// answer on stdout asks the user), Gemini CLI (BeforeTool, AfterTool,
// SessionStart, SessionEnd; exit 2 blocks) and Codex (PreToolUse,
// PostToolUse, SessionStart, SessionEnd; exit 2 blocks), mapping the other
// agents' tool names and inputs to Claude Code's before the policy sees
// them. It also owns the agents' side of a project (probe.go): which agents
// a project uses ([DetectAgents], [ConfiguredAgents]), installing their
// project hooks ([InstallProject], [Settings.Install]), reading their trust
// files ([CheckTrust]: Gemini CLI and Codex silently run no project hook
// until the user trusts the folder, project and hooks), and proving that an
// installed pre hook blocks ([Probe]), for `docket init` and `docket
// doctor`.
//
// These agents fail open: a hook that crashes, times out or exits 1 lets the
// tool run. So the pre hook fails closed: every failure — empty, oversized or
// malformed input, a missing or broken policy, a missing key, a receipt that
// cannot be recorded, the internal deadline, a panic — ends in exit 2 with a
// one-line reason on stderr. So does every command line that cannot be
// read (a misspelt or miscased kind, an agent's event name, extra
// arguments, an unknown flag) unless the event names itself a post or
// session event, and every event whose hook_event_name contradicts the
// command line in a way that involves a pre-tool event ([ParseInvocation],
// dispatch). The post and session hooks cannot block: they always exit 0;
// an event that could not be receipted is kept in .docket/spool, and the
// warning is both a line on stderr and a systemMessage on stdout, which
// all three agents show the user (exit 1 would be shown by Codex only as
// "hook exited with code 1", and exit 2 makes Gemini CLI replace the tool's
// result with "Tool result blocked").
//
// The hooks never wait on the network: receipts are appended to the local
// store, and when a log is configured a detached `docket sync` submits them.
// A hook reaches the store only through its operations; the store never
// calls back into the hook ([DrainSpool] receipts the spooled events for
// `docket sync`).
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/stackgrow"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// DefaultDeadline bounds the pre hook. It must stay below the timeout the
// agent is configured with (docket init writes 30 s), because an agent that
// times a hook out lets the call run.
const DefaultDeadline = 10 * time.Second

// Exit codes of `docket hook`. It never exits 1: every agent reads 1 from a
// pre hook as "run the call".
const (
	ExitOK    = 0 // pre: allowed (or the user is asked); post and session hooks: always
	ExitBlock = 2 // pre: denied, or the gate failed (fail closed); any hook that cannot tell its event is not a pre-tool one
)

// Options configure one hook run.
type Options struct {
	// Store is the project's .docket store.
	Store *store.Store
	// Err, if set, is a failure before Run that left no Store (finding the
	// project): a pre hook blocks with it, the others warn.
	Err error
	// Agent is the agent whose protocol is spoken; "" lets the event's
	// hook_event_name say (Claude Code unless it is another agent's event).
	Agent Agent
	// Kind is the hook the command line asked for.
	Kind Kind
	// ArgsErr is what was wrong with the command line (Invocation.Err);
	// Kind and Agent then hold what could be read of it, and the event is
	// dispatched: a post or session event named by its hook_event_name is
	// receipted as that, with a warning; anything else is blocked.
	ArgsErr error
	// Home is the user's home directory, for "~" in policies.
	Home string
	// Start is when the hook process started; hook_latency_ms is measured
	// from it. Zero means when Run was called.
	Start time.Time
	// Deadline bounds reading the event, and the whole of a pre hook; zero
	// means DefaultDeadline.
	Deadline time.Duration
	// Logger receives at most one line per run, never tool arguments or
	// keys. Nil discards.
	Logger *slog.Logger
	// StartSync, if set, is called after a post or session hook appended a
	// receipt and a log is configured. It must return at once (start a
	// detached `docket sync`), never wait on the network.
	StartSync func(*store.Store)
	// Fault, if set, is called at named points of the pre hook ("decide");
	// tests use it to inject panics and delays.
	Fault func(point string)

	// gate returns the project's gate (gate.Open), waiting for it until
	// ctx ends; set by Run and DrainSpool.
	gate func(ctx context.Context) (*gate.Gate, error)
}

// openGate starts opening the gate of store s (gate.Open) on its own
// goroutine, so that it overlaps reading the event, and returns the
// function that waits for it. When the hook may decide (decides), the
// policy's loading starts then too (gate.Preload); a post or session hook
// only records and never parses it. A panic while opening is an error.
func openGate(ctx context.Context, s *store.Store, home string, decides bool) func(context.Context) (*gate.Gate, error) {
	type opened struct {
		g   *gate.Gate
		err error
	}
	c := make(chan opened, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				c <- opened{err: fmt.Errorf("internal error opening the gate (panic: %.200v)", r)}
			}
		}()
		g, err := gate.Open(ctx, s.Project(), gate.Options{Home: home, Store: s})
		if err == nil && decides {
			g.Preload()
		}
		c <- opened{g, err}
	}()
	return func(ctx context.Context) (*gate.Gate, error) {
		select {
		case o := <-c:
			c <- o // for the next caller
			return o.g, o.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Run runs one hook: it reads the agent's event from stdin, dispatches it
// (the command line's kind, checked against the event's hook_event_name),
// answers on stdout and stderr as the agent's protocol wants, and returns
// the exit code. A pre hook returns ExitBlock on every failure; so does
// every invocation whose event may be a pre-tool one but cannot be decided
// as one. Post and session hooks return ExitOK.
func Run(ctx context.Context, opts Options, stdin io.Reader, stdout, stderr io.Writer) int {
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	deadline := opts.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if opts.Err == nil && opts.Store != nil {
		// Opening the gate (loading the key, the configuration and,
		// slowest, the policy a pre hook needs) overlaps reading the
		// event. A command line that names no known kind may turn out to
		// be a pre hook (dispatch infers it from the event).
		opts.gate = openGate(ctx, opts.Store, opts.Home, opts.Kind == Pre || opts.ArgsErr != nil)
	}
	var in input
	in.data, in.err = readInput(ctx, stdin)
	if in.err == nil {
		in.event, in.err = decodeInput(in.data)
	}
	name, _ := in.event["hook_event_name"].(string)
	r := dispatch(Invocation{Kind: opts.Kind, Agent: opts.Agent, Err: opts.ArgsErr}, name)
	if r.Block != "" {
		opts.Logger.Warn("hook blocked", "kind", string(opts.Kind), "event", name, "err", r.Block)
		fmt.Fprintf(stderr, "docket: %s\n", oneLine(r.Block))
		return ExitBlock
	}
	opts.Kind, opts.Agent = r.Kind, r.Agent
	if opts.Kind == Pre {
		return runPre(ctx, deadline, opts, in, stdout, stderr)
	}
	return runRecord(opts, in, r.Warning, stdout, stderr)
}

// input is the event a hook read: its bytes and, once parsed, its members.
type input struct {
	data  []byte
	event map[string]any
	err   error // reading or parsing failed
}

// readInput reads the event from stdin, up to one byte more than MaxInput,
// until ctx is done.
func readInput(ctx context.Context, stdin io.Reader) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	c := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
		c <- read{data, err}
	}()
	select {
	case r := <-c:
		if r.err != nil {
			return r.data, fmt.Errorf("reading hook input: %w", r.err)
		}
		return r.data, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("reading hook input: %w", context.Cause(ctx))
	}
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

// runPre is the fail-closed wrapper around pre: the deadline (ctx's), a
// recovered panic and every error become exit 2 with one line on stderr.
func runPre(ctx context.Context, deadline time.Duration, opts Options, in input, stdout, stderr io.Writer) int {
	done := make(chan answer, 1)
	go func() {
		stackgrow.Grow() // deciding recurses (the shell analyser, Cedar)
		defer func() {
			if r := recover(); r != nil {
				done <- block("gate error: internal error (panic: %.200v); the call is blocked", r)
			}
		}()
		done <- pre(ctx, opts, in)
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

// pre decides one call, signs the decision into the chain and answers.
func pre(ctx context.Context, opts Options, in input) answer {
	if opts.Err != nil {
		return block("gate error: %v; the call is blocked", opts.Err)
	}
	if in.err != nil {
		return block("gate error: %v; the call is blocked", in.err)
	}
	ev, err := eventOf(opts.Agent, Pre, in.event, opts.Store.Project())
	if err != nil {
		return block("gate error: %v; the call is blocked", err)
	}
	// The gate's fail-closed rule (package gate): no key is no gate, and
	// blocks; a policy or configuration that does not load is a signed deny.
	g, err := opts.gate(ctx)
	if ctx.Err() != nil {
		return block("gate error: internal deadline exceeded loading the key; the call is blocked")
	}
	if err != nil {
		return block("gate error: %v; the call is blocked (run docket init)", err)
	}
	if opts.Fault != nil {
		opts.Fault("decide")
	}
	d, err := g.Decide(ctx, ev.Call(opts.Start))
	if ctx.Err() != nil {
		return block("gate error: internal deadline exceeded; the call is blocked")
	}
	if err != nil {
		return block("gate error: %v; the call is blocked", err)
	}
	opts.Logger.Info("hook pre", "session", ev.SessionID, "sequence", d.Sequence, "tool", ev.ToolName,
		"decision", d.Decision.Decision, "reason", d.Reason, "enforced", !d.Unenforced, "latency", time.Since(opts.Start))

	// In observe mode a deny or ask the policy gave is answered as an
	// allow (gate.Decision.Answer); its receipt says it was not enforced.
	switch d.Answer() {
	case policy.Allow:
		if a, ok := confineBash(ctx, opts, g, ev.ToolName, in.event, "allow", "allowed"); ok {
			return a
		}
		// No output: an explicit "allow" would skip the agent's own permission checks.
		return answer{code: ExitOK}
	case policy.RequireApproval:
		if a, ok := confineBash(ctx, opts, g, ev.ToolName, in.event, "ask", oneLine(d.Message)); ok {
			return a
		}
		if opts.Agent == Claude {
			return answer{code: ExitOK, stdout: askAnswer(d.Decision)}
		}
		return block("approval required but %s hooks cannot ask: %s", opts.Agent, d.Message)
	}
	return block("denied: %s [%s%s]", d.Message, d.Reason, idList(d.PolicyIDs))
}

// askAnswer is Claude Code's PreToolUse answer that asks the user.
func askAnswer(d policy.Decision) []byte {
	b, _ := json.Marshal(map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":            receipts.PreToolUse,
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
// it receipts the event, or spools it, and exits 0 either way. Warnings
// (warning, from dispatch, and whatever goes wrong) are given as one line on
// stderr and as the systemMessage of a JSON answer on stdout, the form
// Claude Code, Gemini CLI and Codex all show the user.
func runRecord(opts Options, in input, warning string, stdout, stderr io.Writer) (code int) {
	var warns []string
	if warning != "" {
		warns = append(warns, warning)
	}
	defer func() {
		if r := recover(); r != nil {
			warns = append(warns, opts.spool(in.data, fmt.Errorf("internal error (panic: %.200v)", r)))
		}
		warn(stdout, stderr, warns)
		code = ExitOK
	}()
	err := in.err
	switch {
	case opts.Err != nil:
		warns = append(warns, fmt.Sprintf("%s event not receipted and not spooled: %v", opts.Kind, opts.Err))
		return ExitOK
	case err == nil:
		var note string
		note, err = record(opts, in.event)
		if note != "" {
			warns = append(warns, note)
		}
	}
	if err != nil {
		warns = append(warns, opts.spool(in.data, err))
		return ExitOK
	}
	if n, err := opts.Store.DrainSpool(maxDrain, opts.receiptSpooled); err != nil {
		warns = append(warns, fmt.Sprintf("spooled events: %v", err))
	} else if n > 0 {
		opts.Logger.Info("spooled events receipted", "count", n)
	}
	if opts.StartSync != nil {
		if cfg, err := opts.Store.Config(); err != nil {
			warns = append(warns, err.Error())
		} else if cfg.HasLog() {
			opts.StartSync(opts.Store)
		}
	}
	return ExitOK
}

// spool keeps an event that could not be receipted (because of err) for a
// later hook, and returns the warning that says where.
func (opts Options) spool(data []byte, err error) string {
	opts.Logger.Warn("hook event spooled", "hook", string(opts.Kind), "err", err)
	if opts.Store == nil {
		return fmt.Sprintf("%s event not receipted and not spooled (%v): no project", opts.Kind, err)
	}
	name, serr := opts.Store.Spool(string(opts.Agent), string(opts.Kind), data)
	if serr != nil {
		return fmt.Sprintf("%s event not receipted (%v) and could not be spooled: %v", opts.Kind, err, serr)
	}
	return fmt.Sprintf("%s event not receipted (%v); kept in %s", opts.Kind, err, name)
}

// warn gives warnings as one line on stderr and as the systemMessage of a
// JSON answer on stdout.
func warn(stdout, stderr io.Writer, warns []string) {
	if len(warns) == 0 {
		return
	}
	msg := oneLine("docket: warning: " + strings.Join(warns, "; "))
	fmt.Fprintln(stderr, msg)
	b, _ := json.Marshal(map[string]string{"systemMessage": msg})
	stdout.Write(append(b, '\n'))
}

// record signs the execution or lifecycle receipt of one event, with the
// gate the pre hook decides with. At Stop and SessionEnd it first
// reconciles the agent's record; note then says what it found for the
// user to see, if anything.
func record(opts Options, event map[string]any) (note string, err error) {
	ev, err := eventOf(opts.Agent, opts.Kind, event, opts.Store.Project())
	if err != nil {
		return "", err
	}
	ctx := context.Background()
	g, err := opts.gate(ctx)
	if err != nil {
		return "", err
	}
	var transcriptHash string
	if opts.Kind == SessionEnd || opts.Kind == Stop {
		// Off the per-call path: the agent's record is read only here.
		if transcriptHash, note, err = opts.reconcile(ctx, ev); err != nil || opts.Kind == Stop {
			return note, err
		}
	}
	hookEvent := opts.Kind.HookEvent()
	if ev.Failed {
		hookEvent = receipts.PostToolUseFailure
	}
	confinement, denied, origHash := executionConfinement(opts, ev.ToolName, event)
	if origHash != "" {
		ev.ToolInputHash = origHash
	}
	reason := ""
	if denied && opts.Kind != SessionStart && opts.Kind != SessionEnd {
		hookEvent, reason = receipts.PostToolUseFailure, receipts.ReasonConfinementDenied
	}
	r, err := g.Record(ctx, gate.Event{
		Confinement: confinement, Reason: reason,
		HookEvent: hookEvent,
		SessionID: ev.SessionID,
		Agent:     opts.Agent.ReceiptName(),
		ToolName:  ev.ToolName, ToolUseID: ev.ToolUseID,
		ToolInputHash: ev.ToolInputHash, ToolOutputHash: ev.ToolOutputHash,
		Start: opts.Start, Model: ev.Model, TranscriptHash: transcriptHash,
	})
	if err != nil {
		return note, err
	}
	if r.Unlinked {
		opts.Logger.Warn("execution without a decision", "session", ev.SessionID, "sequence", r.Sequence, "tool", ev.ToolName)
	}
	opts.Logger.Info("hook "+string(opts.Kind), "session", ev.SessionID, "sequence", r.Sequence)
	return note, nil
}

// maxDrain bounds the spooled events one hook run receipts.
const maxDrain = 32

// DrainSpool receipts the hook events spooled in the store s (the post or
// session hooks the agents ran, again), oldest first, as `docket sync`
// does before it submits, so that they are synced too. An event that can
// never be receipted (bad input) is rejected; one of an unknown agent or
// hook is skipped. It returns how many it receipted. The hook drives the
// store here, never the store the hook.
func DrainSpool(s *store.Store, home string) (int, error) {
	opts := Options{Store: s, Home: home, Start: time.Now(), Logger: slog.New(slog.DiscardHandler)}
	// The gate is opened on the first spooled event, once.
	open := sync.OnceValues(func() (*gate.Gate, error) {
		return gate.Open(context.Background(), s.Project(), gate.Options{Home: home, Store: s})
	})
	opts.gate = func(context.Context) (*gate.Gate, error) { return open() }
	return s.DrainSpool(-1, opts.receiptSpooled)
}

func (opts Options) receiptSpooled(ev store.SpooledEvent) error {
	agent, aerr := ParseAgent(ev.Agent)
	kind, kerr := ParseKind(ev.Kind)
	if aerr != nil || kerr != nil || kind == Pre {
		return store.ErrSpoolSkip
	}
	opts.Agent, opts.Kind = agent, kind
	event, err := decodeInput(ev.Data)
	if err == nil {
		_, err = record(opts, event)
	}
	if ie := (*InputError)(nil); errors.As(err, &ie) {
		return fmt.Errorf("%w: %w", store.ErrSpoolReject, err)
	}
	return err
}
