// Package suggest drafts Cedar permits from observed decisions, for a
// person to review: what `docket policy suggest` prints after a project has
// run in observe mode (package gate).
//
// An [Observation] is one decision receipt the policy did not answer with
// an allow, with the call's exact input where the local journal kept it
// (store.JournalEntry). [Draft] decides each observed call again, request
// by request, and drafts, for the Cedar requests that no policy permitted
// (default_deny), the narrowest permits that would let them through:
// grouped by action and by what the resources share (a domain, a directory
// of the project, one program, one tool), never a wildcard over the
// resources of an action that runs, writes or reaches the network.
//
// What it refuses to suggest, it says, as comments in the draft:
//
//   - a request a forbid matched (deny or ask): a permit cannot override a
//     forbid; the forbid is for a person to change, if at all;
//   - a request the default policy forbids (policy.Default), even where
//     the project's own policy only lacked a permit;
//   - programs that run what their arguments say (shells, interpreters,
//     privilege and process wrappers): a permit for the program is a
//     permit for everything;
//   - calls the policy could not read (gate_error, parse_error,
//     dynamic_command, invalid_input, invalid_url), and calls whose input
//     the journal did not keep.
//
// The draft is checked before it is returned: the project's policy with
// the draft added must load (so `docket policy check` accepts it), and the
// observed calls are decided again with it, so the draft's header says how
// many of them it would let through.
package suggest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"

	"github.com/docketlog/docket/policy"
)

// Observation is one observed decision that was not an allow.
type Observation struct {
	// Agent is the receipt's agent (claude-code, gemini-cli, codex, …).
	Agent    string
	ToolName string
	// Decision, Reason and PolicyIDs are the receipt's.
	Decision, Reason string
	PolicyIDs        []string
	// Enforced is false for a decision observe mode did not enforce.
	Enforced    bool
	ReceiptHash string
	// Calls are the policy's view of the call, mapped from the journal's
	// input as the hook or relay mapped it; none when the journal did not
	// keep the input.
	Calls []policy.Call
}

// Options configure Draft.
type Options struct {
	// Policy is the project's policy, as loaded (its files are kept beside
	// the draft to check it). Required.
	Policy *policy.Engine
	// Default is the policy whose forbids are never suggested against;
	// nil means policy.LoadDefault.
	Default *policy.Engine
	// Project and Home are the project root and home directory the calls
	// are decided with.
	Project, Home string
	// FileName is the name the draft is checked under (default
	// "suggested.cedar"); it must not be one of the policy's files.
	FileName string
}

// Result is a draft and what it would do.
type Result struct {
	// Cedar is the draft: permits with their reasons, and comments saying
	// what was not suggested and why. It loads beside the project's policy.
	Cedar []byte
	// Permits is how many permits the draft holds.
	Permits int
	// Observed is how many observations Draft read; Allowed how many of
	// them the project's policy with the draft allows.
	Observed, Allowed int
	// Refused lists what was not suggested, one line each.
	Refused []string
}

// dangerousPrograms run what their arguments say, or act with more
// privilege than the agent's: a permit on the program is a permit on
// everything it can be told to do.
var dangerousPrograms = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "csh": true, "tcsh": true,
	"sudo": true, "su": true, "doas": true, "pkexec": true, "env": true, "xargs": true, "eval": true, "exec": true,
	"nohup": true, "timeout": true, "nice": true, "chroot": true, "ssh": true, "scp": true, "nc": true, "ncat": true,
	"socat": true, "telnet": true, "python": true, "python3": true, "node": true, "perl": true, "ruby": true,
	"php": true, "lua": true, "deno": true, "bun": true, "osascript": true, "powershell": true, "pwsh": true,
	"dd": true, "shred": true, "mkfs": true, "wipefs": true, "fdisk": true, "docker": true, "kubectl": true,
	"crontab": true, "systemctl": true, "launchctl": true, "at": true, "git": true,
}

// unreadable are the reasons of decisions about calls the policy could not
// read: no permit lets them through.
var unreadable = map[string]string{
	policy.ReasonGateError:    "the policy could not decide it (gate_error): fix the policy, not the permits",
	policy.ReasonParseError:   "the command line does not parse: no permit can name what it runs",
	policy.ReasonDynamic:      "a program name or shell string is not a literal: no permit can name what it runs",
	policy.ReasonInvalidInput: "the tool input is unusable",
	policy.ReasonInvalidURL:   "the URL is not one the policy reads (not http(s), userinfo, bad host)",
}

// request is one Cedar request of an observed call, as the policy built it.
type request struct {
	Action         string   `json:"action"`
	Resource       string   `json:"resource"`
	Decision       string   `json:"decision"`
	PolicyIDs      []string `json:"policy_ids"`
	Errors         []string `json:"errors"`
	ResourceEntity *struct {
		UID struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"uid"`
		Attrs map[string]any `json:"attrs"`
	} `json:"resource_entity"`
}

func requestsOf(d policy.Decision) ([]request, error) {
	out := make([]request, 0, len(d.Requests))
	for _, r := range d.Requests {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		var q request
		if err := json.Unmarshal(data, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// refusals counts what was not suggested, by its line.
type refusals struct {
	lines []string
	n     map[string]int
}

func (r *refusals) add(format string, a ...any) {
	line := fmt.Sprintf(format, a...)
	if r.n == nil {
		r.n = make(map[string]int)
	}
	if r.n[line] == 0 {
		r.lines = append(r.lines, line)
	}
	r.n[line]++
}

// Draft drafts permits for the requests of obs that no policy permitted.
// Its error is a draft that does not load beside the policy (a bug here,
// never a draft returned anyway), or ctx ending.
func Draft(ctx context.Context, obs []Observation, opts Options) (Result, error) {
	if opts.Policy == nil {
		return Result{}, fmt.Errorf("suggest: no policy")
	}
	def := opts.Default
	if def == nil {
		var err error
		if def, err = policy.LoadDefault(); err != nil {
			return Result{}, fmt.Errorf("suggest: default policy: %w", err)
		}
	}
	if opts.FileName == "" {
		opts.FileName = "suggested.cedar"
	}
	g := newGroups(opts.Project)
	var refused refusals
	for _, o := range obs {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if why, ok := unreadable[o.Reason]; ok {
			refused.add("%s: %s", o.ToolName, why)
			continue
		}
		if len(o.Calls) == 0 {
			refused.add("%s: %s by %s, input not in the journal (docket init -journal keeps it)", o.ToolName, o.Reason, idsOr(o.PolicyIDs))
			continue
		}
		for _, c := range o.Calls {
			c.ProjectDir, c.Home = opts.Project, opts.Home
			now, err := requestsOf(opts.Policy.Decide(ctx, c))
			if err != nil {
				return Result{}, err
			}
			base, err := requestsOf(def.Decide(ctx, c))
			if err != nil {
				return Result{}, err
			}
			for _, r := range now {
				switch {
				case r.Decision == policy.Allow:
				case len(r.Errors) > 0:
					refused.add("%s on %s: the policy could not evaluate it (%s)", r.Action, r.Resource, strings.Join(r.Errors, "; "))
				case len(r.PolicyIDs) > 0:
					refused.add("%s on %s: forbidden by %s; a permit cannot override a forbid (change that rule by hand, if at all)", r.Action, r.Resource, strings.Join(r.PolicyIDs, ", "))
				default:
					if ids := forbiddenBy(base, r); len(ids) > 0 {
						refused.add("%s on %s: the default policy forbids it (%s)", r.Action, r.Resource, strings.Join(ids, ", "))
						continue
					}
					if why := g.add(r); why != "" {
						refused.add("%s on %s: %s", r.Action, r.Resource, why)
					}
				}
			}
		}
	}
	permits := g.permits(opts.Policy.Check().Policies)
	res := Result{Observed: len(obs), Permits: len(permits), Refused: refused.lines}
	var body bytes.Buffer
	for _, p := range permits {
		body.WriteString(p)
	}
	files := opts.Policy.Files()
	for slices.ContainsFunc(files, func(f policy.File) bool { return f.Name == opts.FileName }) {
		opts.FileName = "_" + opts.FileName
	}
	files = append(files, policy.File{Name: opts.FileName, Data: body.Bytes()})
	withDraft, err := policy.Load(files...)
	if err != nil {
		return Result{}, fmt.Errorf("suggest: the draft does not load beside the policy: %w", err)
	}
	for _, o := range obs {
		if len(o.Calls) == 0 {
			continue
		}
		allowed := true
		for _, c := range o.Calls {
			c.ProjectDir, c.Home = opts.Project, opts.Home
			allowed = allowed && withDraft.Decide(ctx, c).Decision == policy.Allow
		}
		if allowed {
			res.Allowed++
		}
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "// Drafted by docket policy suggest for a person to review: nothing here is in\n")
	fmt.Fprintf(&out, "// force until it is saved under .docket/policy/ and docket policy check accepts it.\n")
	fmt.Fprintf(&out, "// From %d observed decisions that were not allows; with these %d permits the\n", res.Observed, res.Permits)
	fmt.Fprintf(&out, "// policy would allow %d of them. A permit never overrides a forbid.\n", res.Allowed)
	out.WriteString(body.String())
	if len(refused.lines) > 0 {
		out.WriteString("\n// Not suggested:\n")
		for _, l := range refused.lines {
			fmt.Fprintf(&out, "//   %s (%d)\n", oneLine(l), refused.n[l])
		}
	}
	res.Cedar = out.Bytes()
	return res, nil
}

// forbiddenBy returns the forbids of the default policy that matched the
// same request (action and resource) in base.
func forbiddenBy(base []request, r request) []string {
	var ids []string
	for _, b := range base {
		if b.Action == r.Action && b.Resource == r.Resource && b.Decision != policy.Allow {
			ids = append(ids, b.PolicyIDs...)
			if len(b.PolicyIDs) == 0 && len(b.Errors) > 0 {
				ids = append(ids, "(evaluation error)")
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func idsOr(ids []string) string {
	if len(ids) == 0 {
		return "no permit"
	}
	return strings.Join(ids, ", ")
}

// oneLine keeps a comment on one line: a resource may hold a newline.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 || r == 0x85 {
			return ' '
		}
		return r
	}, s)
}

// uid renders an entity UID as a Cedar literal.
func uid(typ, id string) string {
	return types.NewEntityUID(types.EntityType(typ), types.String(id)).String()
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
