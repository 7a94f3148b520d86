package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Agent names the agent whose hook protocol is spoken.
type Agent string

// Supported agents.
const (
	Claude Agent = "claude" // Claude Code
	Gemini Agent = "gemini" // Gemini CLI
	Codex  Agent = "codex"  // OpenAI Codex CLI
)

// ParseAgent accepts an agent name as given to `docket hook -agent`.
func ParseAgent(s string) (Agent, error) {
	switch s {
	case "", "claude", "claude-code":
		return Claude, nil
	case "gemini", "gemini-cli":
		return Gemini, nil
	case "codex":
		return Codex, nil
	}
	return "", fmt.Errorf("unknown agent %q (want claude, gemini or codex)", s)
}

// ReceiptName is the agent's name in receipts (the payload's agent member).
func (a Agent) ReceiptName() string {
	switch a {
	case Gemini:
		return "gemini-cli"
	case Codex:
		return "codex"
	}
	return "claude-code"
}

// Kind is the hook being run.
type Kind string

// Hook kinds, the first argument of `docket hook`.
const (
	Pre          Kind = "pre"
	Post         Kind = "post"
	PostFailure  Kind = "post-failure"
	SessionStart Kind = "session-start"
	SessionEnd   Kind = "session-end"
)

// ParseKind accepts a hook kind.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Pre, Post, PostFailure, SessionStart, SessionEnd:
		return k, nil
	}
	return "", fmt.Errorf("unknown hook %q (want pre, post, post-failure, session-start or session-end)", s)
}

// HookEvent is the kind's hook_event in receipts (Claude Code's event name).
func (k Kind) HookEvent() string {
	switch k {
	case Pre:
		return receipts.PreToolUse
	case Post:
		return receipts.PostToolUse
	case PostFailure:
		return receipts.PostToolUseFailure
	case SessionStart:
		return receipts.SessionStart
	case SessionEnd:
		return receipts.SessionEnd
	}
	return ""
}

// eventNames lists the hook_event_name values each agent sends for a kind.
// An event naming another hook is refused, so that a hook wired to the
// wrong event cannot be mistaken for a gate.
var eventNames = map[Kind][]string{
	Pre:          {receipts.PreToolUse, "BeforeTool"},
	Post:         {receipts.PostToolUse, "AfterTool"},
	PostFailure:  {receipts.PostToolUseFailure, receipts.PostToolUse, "AfterTool"},
	SessionStart: {receipts.SessionStart},
	SessionEnd:   {receipts.SessionEnd},
}

// MaxInput is the largest hook event accepted on stdin, in bytes.
const MaxInput = receipts.MaxDocumentSize

// Event is one hook event, parsed strictly and normalized.
type Event struct {
	Agent     Agent
	Kind      Kind
	SessionID string
	// Cwd is the agent's working directory (absolute).
	Cwd string
	// ToolName is the tool as the agent names it (recorded in receipts).
	ToolName  string
	ToolUseID string
	// ToolInputHash is "sha256:" + hex SHA-256 of JCS(tool_input).
	ToolInputHash string
	// ToolInput is JCS(tool_input) on a pre event, for the local journal.
	ToolInput []byte
	// ToolOutputHash is the same construction over the tool response (or
	// the error of a failed call); executions only.
	ToolOutputHash string
	// Failed is set on a post event of an agent without a failure event
	// (Gemini CLI, Codex) whose tool response shows that the call failed:
	// it is receipted as a PostToolUseFailure, as Claude Code's is.
	Failed bool
	// Model is the model the agent reports in the event, if any.
	Model string
	// Calls are what the gate decides on: the call mapped to Claude Code
	// tool names and inputs. Most events give one call; a Gemini web_fetch
	// naming several URLs or a Codex patch touching several files give one
	// per target, and all of them must be allowed.
	Calls []policy.Call
}

// InputError is a hook event that cannot be used: empty, too large, not
// strict JSON, or missing what the hook needs.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{fmt.Sprintf(format, args...)}
}

// ParseEvent parses a hook event sent by agent for the hook kind. It refuses
// empty and oversized input, anything that is not one strict JSON object
// (duplicate keys included, so that two "command" members cannot show the
// gate one command and the tool another), members of the wrong type, and
// tool events without a session, tool name or tool_input object. Relative
// or missing cwd is resolved against dir.
func ParseEvent(agent Agent, kind Kind, data []byte, dir string) (*Event, error) {
	m, err := decodeInput(data)
	if err != nil {
		return nil, err
	}
	return eventOf(agent, kind, m, dir)
}

// decodeInput parses hook input strictly into one JSON object.
func decodeInput(data []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, inputErrorf("empty hook input on stdin")
	}
	if len(data) > MaxInput {
		return nil, inputErrorf("hook input too large (over %d bytes)", MaxInput)
	}
	m, err := receipts.ParseObject(data)
	if err != nil {
		return nil, inputErrorf("malformed hook input: %v", err)
	}
	return m, nil
}

// eventOf is ParseEvent for input decodeInput parsed.
func eventOf(agent Agent, kind Kind, m map[string]any, dir string) (*Event, error) {
	ev := &Event{Agent: agent, Kind: kind}
	var name string
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"session_id", &ev.SessionID}, {"cwd", &ev.Cwd}, {"hook_event_name", &name},
		{"tool_name", &ev.ToolName}, {"tool_use_id", &ev.ToolUseID},
	} {
		v, ok := m[f.key]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, inputErrorf("malformed hook input: %s is not a string", f.key)
		}
		*f.dst = s
	}
	// The model is a declaration the receipts carry; an odd value is
	// dropped rather than refused, so that it never blocks a call.
	if s, ok := m["model"].(string); ok && len(s) <= 200 {
		ev.Model = s
	}
	if name != "" {
		ok := false
		for _, n := range eventNames[kind] {
			ok = ok || n == name
		}
		if !ok {
			return nil, inputErrorf("hook_event_name %q sent to docket hook %s", name, kind)
		}
	}
	if ev.SessionID == "" {
		return nil, inputErrorf("hook input has no session_id")
	}
	if ev.Cwd == "" {
		ev.Cwd = dir
	} else if !filepath.IsAbs(ev.Cwd) {
		ev.Cwd = filepath.Join(dir, ev.Cwd)
	}
	ev.Cwd = filepath.Clean(ev.Cwd)
	if kind == SessionStart || kind == SessionEnd {
		return ev, nil
	}

	if ev.ToolName == "" {
		return nil, inputErrorf("hook input has no tool_name")
	}
	in, ok := m["tool_input"].(map[string]any)
	if !ok && kind == Pre {
		return nil, inputErrorf("hook input has no tool_input object")
	}
	if ok {
		canon, err := receipts.Canonicalize(in)
		if err != nil {
			return nil, inputErrorf("malformed tool_input: %v", err)
		}
		ev.ToolInputHash = sha256Ref(canon)
		if kind == Pre {
			ev.ToolInput = canon
			if ev.Calls, err = mapCalls(agent, ev.ToolName, in, canon, m); err != nil {
				return nil, err
			}
			for i := range ev.Calls {
				ev.Calls[i].Agent = string(agent)
				switch c := &ev.Calls[i]; {
				case c.Cwd == "":
					c.Cwd = ev.Cwd
				case !filepath.IsAbs(c.Cwd):
					c.Cwd = filepath.Join(ev.Cwd, c.Cwd)
				}
			}
		}
	}
	if kind != Pre {
		out, ok := m["tool_response"]
		if !ok {
			out, ok = m["error"]
		}
		if ok {
			if canon, err := receipts.Canonicalize(out); err == nil {
				ev.ToolOutputHash = sha256Ref(canon)
			}
		}
		ev.Failed = kind == Post && agent != Claude && responseFailed(m)
	}
	return ev, nil
}

// exitRE finds a non-zero exit code where Gemini CLI ("Exit Code: 1") and
// older Codex ("Exit code: 1", "exit_code") write it.
var exitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?mi)^\s*(?:exit code|"?exit_code"?)\s*[:=]\s*-?[1-9][0-9]*\b`)
})

// responseFailed reports whether a post event of an agent without a
// failure event shows a failed call: an "error" member (in the event or the
// tool response), or a non-zero exit code in the response's text. Codex
// 0.169 sends a shell call's output as a plain string with no exit code,
// so a failed Codex command is seen only when its output says so this way.
func responseFailed(event map[string]any) bool {
	if e, ok := event["error"]; ok && e != nil && e != "" {
		return true
	}
	switch r := event["tool_response"].(type) {
	case string:
		return exitRE().MatchString(r)
	case map[string]any:
		if e, ok := r["error"]; ok && e != nil && e != "" {
			return true
		}
		if c, ok := r["exit_code"].(interface{ Int64() (int64, error) }); ok {
			n, _ := c.Int64()
			return n != 0
		}
		for _, k := range []string{"llmContent", "output"} {
			if s, ok := r[k].(string); ok && exitRE().MatchString(s) {
				return true
			}
		}
	}
	return false
}

// CallKey is the key that links the execution of a call to its decision:
// the tool_use_id, or a hash of session, tool and input without one.
func (ev *Event) CallKey() string {
	if ev.ToolUseID != "" {
		return ev.ToolUseID
	}
	return store.CallKey(ev.SessionID, ev.ToolName, ev.ToolInputHash)
}

// Call is the gate's view of a pre event; handling it started at start.
func (ev *Event) Call(start time.Time) gate.Call {
	return gate.Call{
		SessionID: ev.SessionID, Agent: ev.Agent.ReceiptName(),
		ToolName: ev.ToolName, ToolUseID: ev.ToolUseID, ToolInputHash: ev.ToolInputHash,
		Requests: ev.Calls, Start: start, Model: ev.Model, ToolInput: ev.ToolInput,
	}
}

func sha256Ref(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// mapCalls maps a tool call to the Claude Code tool calls the gate decides.
// canon is the JCS form of in.
func mapCalls(agent Agent, tool string, in map[string]any, canon []byte, event map[string]any) ([]policy.Call, error) {
	switch agent {
	case Gemini:
		return geminiCalls(tool, in, event)
	case Codex:
		return codexCalls(tool, in)
	}
	return []policy.Call{{ToolName: tool, ToolInput: json.RawMessage(canon)}}, nil
}
