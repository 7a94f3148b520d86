package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
)

// Confining the agents' shell calls (issue 23). In a project whose
// configuration says confine, the pre hook answers an allowed shell call
// with a rewritten input whose command runs the original under `docket
// exec` with the policy's confinement: Claude Code's and Codex's
// permissionDecision "allow" with updatedInput, Gemini CLI's
// hookSpecificOutput.tool_input. The
// wrapper keeps what the Bash tool's user relies on: the exit status
// (the command's, returned last), stdout and stderr (the command's own
// streams), interrupts (docket exec passes signals on, and the command
// is in the tool's process group) and the working directory carried
// between calls (the confined shell writes its last directory to a
// temporary file, and the tool's shell cd's there).

// wrapperRE matches a command the pre hook rewrote, capturing the digest
// and mechanism it named. The post hook reads them back for the
// execution receipt.
var wrapperRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:__docket_cwd="\$\(mktemp\)" && \{ )?` + quotedRE + ` exec -confine ` + quotedRE + ` -digest '(sha256:[0-9a-f]{64})' -mechanism '([a-z]+)' `)
})

// shellRE captures the original command of a rewritten one.
var shellRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(` -mechanism '[a-z]+' (?:-cwd-file "\$__docket_cwd" )?-shell (` + quotedRE + `)(?:; __docket_st=\$\?; |$)`)
})

// shellUnquote reverses shellQuote.
func shellUnquote(q string) string {
	var b strings.Builder
	for len(q) > 0 {
		if strings.HasPrefix(q, `\'`) {
			b.WriteByte('\'')
			q = q[2:]
			continue
		}
		end := strings.IndexByte(q[1:], '\'')
		if q[0] != '\'' || end < 0 {
			return b.String() + q
		}
		b.WriteString(q[1 : end+1])
		q = q[end+2:]
	}
	return b.String()
}

// quotedRE matches one word as shellQuote writes it.
const quotedRE = `(?:'[^']*'|\\')+`

// shellQuote quotes s for a POSIX shell (and zsh).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// confinedCommand returns the shell command that runs command under the
// confinement in file. With carryCwd (Claude Code, whose Bash tool keeps
// the working directory from one call to the next) the tool's shell
// follows the confined shell's last directory; without it (Gemini CLI
// and Codex run each command afresh, and Gemini refuses a command with
// $(…) in it) the command is docket exec alone.
func confinedCommand(docket, file, digest, mechanism, command string, carryCwd bool) string {
	if !carryCwd {
		return shellQuote(docket) + ` exec -confine ` + shellQuote(file) + ` -digest ` + shellQuote(digest) +
			` -mechanism ` + shellQuote(mechanism) + ` -shell ` + shellQuote(command)
	}
	return `__docket_cwd="$(mktemp)" && { ` + shellQuote(docket) + ` exec -confine ` + shellQuote(file) +
		` -digest ` + shellQuote(digest) + ` -mechanism ` + shellQuote(mechanism) +
		` -cwd-file "$__docket_cwd" -shell ` + shellQuote(command) +
		`; __docket_st=$?; __docket_dir="$(cat -- "$__docket_cwd" 2>/dev/null)"; rm -f -- "$__docket_cwd"; ` +
		`[ -n "$__docket_dir" ] && cd -- "$__docket_dir"; (exit $__docket_st); }`
}

// docketCommand is the docket binary the rewritten command runs: the one
// the agent ran as this hook.
func docketCommand() (string, error) {
	if filepath.IsAbs(os.Args[0]) {
		return os.Args[0], nil
	}
	return os.Executable()
}

// confineBash answers an allowed Bash call of Claude Code (decision
// "allow") or one the user is asked about ("ask") with the call
// rewritten to run confined, or blocks it when the confinement cannot be
// applied (fail closed). It returns ok false when the project does not
// ask for confinement or the call is not a Bash call.
func confineBash(ctx context.Context, opts Options, g *gate.Gate, toolName string, event map[string]any, decision, reason string) (answer, bool) {
	if toolName != opts.Agent.ShellTool() || (decision == "ask" && opts.Agent != Claude) {
		return answer{}, false
	}
	cfg, err := opts.Store.Config()
	if err != nil {
		return block("gate error: %v; the call is blocked", err), true
	}
	if !cfg.Confine {
		return answer{}, false
	}
	in, _ := event["tool_input"].(map[string]any)
	command, ok := in["command"].(string)
	if !ok {
		return block("gate error: Bash call without a command; the call is blocked"), true
	}
	// The cheap check (one system call) on every call; docket exec fails
	// closed if the user namespace is refused, and doctor checks that.
	mechanism := confine.Mechanism()
	if mechanism == "" {
		return block("denied: this project confines its commands and this machine cannot (%s) [confinement_unavailable]", confine.Support().Detail), true
	}
	// The policy the gate decided with, not read again.
	eng, err := g.Policy(ctx)
	if err != nil {
		return block("denied: the confinement cannot be derived: %v [confinement_unavailable]", err), true
	}
	c, file, err := confine.ForEngine(ctx, eng, opts.Store.Project())
	if err != nil {
		return block("denied: the confinement cannot be derived: %v [confinement_unavailable]", err), true
	}
	digest, err := c.Digest()
	if err != nil {
		return block("gate error: %v; the call is blocked", err), true
	}
	docket, err := docketCommand()
	if err != nil {
		return block("gate error: finding docket: %v; the call is blocked", err), true
	}
	updated := make(map[string]any, len(in))
	for k, v := range in {
		updated[k] = v
	}
	updated["command"] = confinedCommand(docket, file, digest, mechanism, command, opts.Agent == Claude)
	// Claude Code and Codex (since 0.13x, openai/codex#20527) apply
	// updatedInput beside permissionDecision "allow"; Gemini CLI merges
	// hookSpecificOutput.tool_input into the call's arguments.
	out := map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":            receipts.PreToolUse,
			"permissionDecision":       decision,
			"permissionDecisionReason": fmt.Sprintf("docket: %s; runs confined (%s %s)", reason, mechanism, digest[:len("sha256:")+12]),
			"updatedInput":             updated,
		},
	}
	if opts.Agent == Gemini {
		out = map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "BeforeTool", "tool_input": updated}}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return block("gate error: %v; the call is blocked", err), true
	}
	return answer{code: ExitOK, stdout: append(b, '\n')}, true
}

// executionConfinement returns the confinement member of an execution
// receipt: the digest and mechanism of a command the pre hook rewrote,
// "unconfined" for another Bash command in a project that confines, nil
// otherwise. denied reports a result that shows a file operation the
// kernel refused under the confinement.
//
// For a rewritten call, inputHash is the tool_input_hash of the call as the
// agent asked for it (the command before the rewrite): the execution
// receipt commits to the same input as its decision, and links to it by
// that hash where the agent sends no tool_use_id (Gemini CLI).
func executionConfinement(opts Options, toolName string, event map[string]any) (c *receipts.Confinement, denied bool, inputHash string) {
	if toolName != opts.Agent.ShellTool() {
		return nil, false, ""
	}
	in, _ := event["tool_input"].(map[string]any)
	command, _ := in["command"].(string)
	if m := wrapperRE().FindStringSubmatch(command); m != nil {
		out, _ := json.Marshal(event["tool_response"])
		if e, ok := event["error"].(string); ok {
			out = append(out, e...)
		}
		if sm := shellRE().FindStringSubmatch(command); sm != nil {
			orig := make(map[string]any, len(in))
			for k, v := range in {
				orig[k] = v
			}
			orig["command"] = shellUnquote(sm[1])
			if canon, err := receipts.Canonicalize(orig); err == nil {
				inputHash = sha256Ref(canon)
			}
		}
		return &receipts.Confinement{Mechanism: m[2], Digest: m[1]}, confine.Denied(string(out)), inputHash
	}
	if cfg, err := opts.Store.Config(); err == nil && cfg.Confine {
		return &receipts.Confinement{Unconfined: true}, false, ""
	}
	return nil, false, ""
}
