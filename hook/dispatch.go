package hook

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"
)

// An Invocation is the command line of `docket hook` (what follows
// "hook"): one hook kind and the flags -agent and -deadline, in any order.
// It is parsed leniently: whatever could be read is kept, and Err says
// what could not, so that Run can still fail the way the event needs (an
// agent reads any exit but 2 from a pre hook as "run the call").
type Invocation struct {
	// Kind is the hook kind, "" when missing or not one of the kinds.
	Kind Kind
	// Agent is the agent named by -agent, "" when the flag was not given
	// (then the event's hook_event_name decides, and Claude Code otherwise).
	Agent Agent
	// Deadline is -deadline, DefaultDeadline when not given.
	Deadline time.Duration
	// Help is set when -h or -help was given.
	Help bool
	// Err is the first problem of the command line: no kind, an unknown
	// kind (a misspelling, another case, an agent's event name), extra
	// arguments, an unknown flag or a bad flag value. Nil when usable.
	Err error
}

// ParseInvocation parses the arguments of `docket hook`. It never fails:
// problems are reported in Invocation.Err.
func ParseInvocation(args []string) Invocation {
	inv := Invocation{Deadline: DefaultDeadline}
	fs := flag.NewFlagSet("docket hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("agent", "", func(s string) error {
		if inv.Agent != "" {
			return errors.New("given twice")
		}
		a, err := ParseAgent(s)
		inv.Agent = a
		if err == nil && s == "" {
			err = errors.New("empty agent name")
		}
		return err
	})
	fs.DurationVar(&inv.Deadline, "deadline", DefaultDeadline, "")
	var words []string
	var errs []error
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				inv.Help = true
			} else {
				errs = append(errs, err)
			}
			break
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(words) == 0:
		errs = append(errs, errors.New("no hook kind (want pre, post, post-failure, session-start, session-end or stop)"))
	default:
		k, err := ParseKind(words[0])
		if err != nil {
			errs = append(errs, err)
		}
		inv.Kind = k
		if len(words) > 1 {
			errs = append(errs, fmt.Errorf("unexpected arguments %q", words[1:]))
		}
	}
	if inv.Deadline <= 0 {
		errs = append(errs, fmt.Errorf("-deadline %v is not a positive duration", inv.Deadline))
	}
	if len(errs) > 0 {
		inv.Err = errs[0]
	}
	return inv
}

// eventOrigins maps each hook_event_name Docket handles to the hook kind
// that handles it and the agents that send it.
var eventOrigins = map[string]struct {
	kind   Kind
	agents []Agent
}{
	"PreToolUse":         {Pre, []Agent{Claude, Codex}},
	"BeforeTool":         {Pre, []Agent{Gemini}},
	"PostToolUse":        {Post, []Agent{Claude, Codex}},
	"PostToolUseFailure": {PostFailure, []Agent{Claude}},
	"AfterTool":          {Post, []Agent{Gemini}},
	"SessionStart":       {SessionStart, []Agent{Claude, Gemini, Codex}},
	"SessionEnd":         {SessionEnd, []Agent{Claude, Gemini, Codex}},
	"Stop":               {Stop, []Agent{Claude, Codex}},
	"SubagentStop":       {Stop, []Agent{Claude}},
	"AfterAgent":         {Stop, []Agent{Gemini}},
}

// A route is which hook runs for an invocation and its event: Kind for
// Agent, with Warning to give; or, when Block is set, none: a pre-tool
// event (or one that might be) is blocked with Block as the reason.
type route struct {
	Kind    Kind
	Agent   Agent
	Warning string
	Block   string
}

// dispatch decides which hook runs when the command line asked for inv
// and the event on stdin names itself event (its hook_event_name; "" when
// it has none or could not be read). The rules, in order:
//
//   - A usable command line whose kind and agent the event agrees with (or
//     an event that does not say) runs as asked.
//   - A usable command line the event contradicts blocks when either side
//     is a pre hook or the event is not one Docket handles: a hook wired to
//     the wrong event is a broken gate. Otherwise (a post or session hook
//     given another post or session event) the event is receipted as what
//     it says it is, with a warning, so that nothing is lost.
//   - An unusable command line (Invocation.Err) blocks, unless the event
//     names a post or session event: that cannot be blocked, and is
//     receipted as what it says it is, with a warning.
func dispatch(inv Invocation, event string) route {
	origin, known := eventOrigins[event]
	agent := inv.Agent
	if agent == "" {
		agent = Claude
		if known && !slices.Contains(origin.agents, Claude) {
			agent = origin.agents[0]
		}
	}
	as := fmt.Sprintf("docket hook %s", inv.Kind)
	if inv.Agent != "" {
		as += " -agent " + string(inv.Agent)
	}
	if inv.Err == nil {
		if event == "" || slices.Contains(eventNames[inv.Kind], event) && slices.Contains(origin.agents, agent) {
			return route{Kind: inv.Kind, Agent: agent}
		}
		if !known || inv.Kind == Pre || origin.kind == Pre {
			return route{Block: fmt.Sprintf("hook_event_name %q sent to %s: the hook is configured for another event or agent; the call is blocked (fix the hook command)", event, as)}
		}
		r := route{Kind: origin.kind, Agent: agent}
		if !slices.Contains(origin.agents, agent) {
			r.Agent = origin.agents[0]
		}
		r.Warning = fmt.Sprintf("hook_event_name %q sent to %s: receipted as %s %s (fix the hook command)", event, as, r.Agent, r.Kind)
		return r
	}
	if known && origin.kind != Pre {
		r := route{Kind: origin.kind, Agent: agent}
		if !slices.Contains(origin.agents, agent) {
			r.Agent = origin.agents[0]
		}
		r.Warning = fmt.Sprintf("docket hook: %v; the %s event was receipted as %s %s from its hook_event_name (fix the hook command)", inv.Err, event, r.Agent, r.Kind)
		return r
	}
	if event == "" {
		return route{Block: fmt.Sprintf("docket hook: %v, and the event does not say which it is; the call is blocked (fix the hook command)", inv.Err)}
	}
	return route{Block: fmt.Sprintf("docket hook: %v (hook_event_name %q); the call is blocked (fix the hook command)", inv.Err, event)}
}
