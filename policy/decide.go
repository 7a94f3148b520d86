package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/docketlog/docket/policy/internal/shell"
)

// Decision values.
const (
	Allow           = "allow"
	Deny            = "deny"
	RequireApproval = "require_approval"
)

// Reason values of a Decision.
const (
	ReasonAllow        = "cedar_allow"     // every request allowed
	ReasonDeny         = "cedar_deny"      // a forbid policy matched
	ReasonAsk          = "cedar_ask"       // only @on_deny("ask") forbids matched
	ReasonDefaultDeny  = "default_deny"    // no permit matched some request
	ReasonGateError    = "gate_error"      // a policy errored, a request did not match the schema, panic, deadline
	ReasonParseError   = "parse_error"     // the shell command line does not parse
	ReasonDynamic      = "dynamic_command" // a program name or shell string is not a literal
	ReasonInvalidInput = "invalid_input"   // tool name or tool_input unusable
	ReasonInvalidURL   = "invalid_url"     // not http(s), userinfo, bad host
	ReasonNoPolicy     = "no_policy"       // nil Engine
)

// Decision is the gate's answer for one call.
type Decision struct {
	Decision  string    `json:"decision"` // Allow, Deny or RequireApproval
	Reason    string    `json:"reason"`   // one of the Reason constants
	PolicyIDs []string  `json:"policy_ids"`
	Message   string    `json:"message"`  // one line for the human and the agent
	Requests  []Request `json:"requests"` // every Cedar request built, with its own result
}

// Request is one Cedar request built for a call and its individual result.
type Request struct {
	Principal string   `json:"principal"`
	Action    string   `json:"action"`
	Resource  string   `json:"resource"`
	Decision  string   `json:"decision"` // Allow, Deny or RequireApproval
	PolicyIDs []string `json:"policy_ids"`
	Errors    []string `json:"errors,omitempty"`
	// Planted is the file a command was planted in (a Makefile recipe, a
	// package.json script the call writes): such a request counts only
	// when a forbid denies it.
	Planted string `json:"planted,omitempty"`

	req      cedar.Request
	resource types.Entity
}

// MarshalJSON renders the request with its context and resource entity as
// Cedar JSON, for `docket policy eval`.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	ctx, err := r.req.Context.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var res json.RawMessage
	if !r.resource.UID.IsZero() {
		if res, err = r.resource.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err = enc.Encode(struct {
		plain
		Context        json.RawMessage `json:"context"`
		ResourceEntity json.RawMessage `json:"resource_entity,omitempty"`
	}{plain(r), ctx, res})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// JSON renders the decision with every request, its context and resource
// entity, indented and without HTML escaping: the output of
// `docket policy eval`.
func (d Decision) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func deny(reason, msg string) Decision {
	return Decision{Decision: Deny, Reason: reason, Message: msg}
}

// Decide evaluates a call. Every request built for it must be allowed;
// any evaluation error, unusable input, shell parse error or dynamic
// command denies. When every denial comes from forbid policies annotated
// @on_deny("ask"), the decision is RequireApproval. Decide never panics
// and never returns Allow on an error. It honours ctx between requests.
func (e *Engine) Decide(ctx context.Context, c Call) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = deny(ReasonGateError, oneLine(fmt.Sprintf("internal error in policy gate: %v", r)))
		}
	}()
	if e == nil || e.set == nil {
		return deny(ReasonNoPolicy, errNilEngine.Error())
	}
	x, err := newCallEnv(e, c)
	if err == nil {
		var reqs []built
		if reqs, err = x.build(c); err == nil {
			return e.evaluate(ctx, x, reqs)
		}
	}
	var se *shell.Error
	var ie *inputError
	var ue *urlError
	switch {
	case errors.As(err, &se):
		return deny(se.Reason, se.Msg)
	case errors.As(err, &ue):
		return deny(ReasonInvalidURL, ue.msg)
	case errors.As(err, &ie):
		return deny(ReasonInvalidInput, ie.msg)
	}
	return deny(ReasonGateError, err.Error())
}

func (e *Engine) evaluate(ctx context.Context, x *callEnv, reqs []built) Decision {
	d := Decision{Requests: make([]Request, 0, len(reqs))}
	var (
		errIDs, denyIDs, askIDs, allowIDs []string
		firstErr, firstDeny, firstDefault string
		firstAsk                          string
	)
	for _, b := range reqs {
		if err := ctx.Err(); err != nil {
			return deny(ReasonGateError, "policy evaluation interrupted: "+err.Error())
		}
		r := Request{
			Principal: b.req.Principal.String(),
			Action:    b.req.Action.String(),
			Resource:  b.req.Resource.String(),
			req:       b.req,
			Planted:   b.planted,
		}
		r.resource, _ = x.ents[b.req.Resource]
		if b.declared && e.validator != nil {
			if err := e.validator.Request(types.Request(b.req)); err != nil {
				r.Decision = Deny
				r.Errors = append(r.Errors, "request does not match the agent schema: "+oneLine(err.Error()))
				if firstErr == "" {
					firstErr = fmt.Sprintf("%s on %s does not match the agent schema", r.Action, r.Resource)
				}
				d.Requests = append(d.Requests, r)
				continue
			}
		}
		var pols cedar.PolicyIterator = e.set
		if sub, ok := e.byAction[b.req.Action]; ok {
			pols = sub
		}
		dec, diag := cedar.Authorize(pols, x, b.req)
		for _, de := range diag.Errors {
			r.Errors = append(r.Errors, fmt.Sprintf("policy %q: %s", de.PolicyID, oneLine(de.Message)))
			r.PolicyIDs = appendUniq(r.PolicyIDs, string(de.PolicyID))
			errIDs = appendUniq(errIDs, string(de.PolicyID))
			if firstErr == "" {
				firstErr = fmt.Sprintf("policy %q failed to evaluate for %s on %s: %s", de.PolicyID, r.Action, r.Resource, oneLine(de.Message))
			}
		}
		var ids []string
		for _, re := range diag.Reasons {
			ids = append(ids, string(re.PolicyID))
		}
		switch {
		case len(diag.Errors) > 0:
			r.Decision = Deny
		case dec == cedar.Allow:
			r.Decision = Allow
			r.PolicyIDs = ids
			allowIDs = appendUniq(allowIDs, ids...)
		case len(ids) == 0:
			r.Decision = Deny
			if firstDefault == "" && b.planted == "" {
				firstDefault = fmt.Sprintf("no policy permits %s on %s", r.Action, r.Resource)
			}
		default:
			r.PolicyIDs = ids
			allAsk := true
			for _, id := range ids {
				if !e.ask[cedar.PolicyID(id)] {
					allAsk = false
				}
			}
			if allAsk {
				r.Decision = RequireApproval
				if b.planted != "" {
					break // asked about when it runs, if the gate sees it run
				}
				askIDs = appendUniq(askIDs, ids...)
				if firstAsk == "" {
					firstAsk = e.explain(ids[0], r)
				}
			} else {
				r.Decision = Deny
				for _, id := range ids {
					if !e.ask[cedar.PolicyID(id)] {
						denyIDs = appendUniq(denyIDs, id)
						if firstDeny == "" {
							firstDeny = e.explain(id, r)
							if r.Planted != "" {
								firstDeny += ", a command the call plants in " + filepath.Base(r.Planted)
							}
						}
					}
				}
			}
		}
		d.Requests = append(d.Requests, r)
	}
	switch {
	case firstErr != "":
		d.Decision, d.Reason, d.PolicyIDs, d.Message = Deny, ReasonGateError, errIDs, firstErr
	case len(denyIDs) > 0:
		d.Decision, d.Reason, d.PolicyIDs, d.Message = Deny, ReasonDeny, denyIDs, firstDeny
	case firstDefault != "":
		d.Decision, d.Reason, d.Message = Deny, ReasonDefaultDeny, firstDefault
	case len(askIDs) > 0:
		d.Decision, d.Reason, d.PolicyIDs, d.Message = RequireApproval, ReasonAsk, askIDs, firstAsk
	case len(d.Requests) == 0:
		d.Decision, d.Reason, d.Message = Deny, ReasonGateError, "no requests were built for the call"
	default:
		d.Decision, d.Reason, d.PolicyIDs = Allow, ReasonAllow, allowIDs
		d.Message = fmt.Sprintf("allowed by %s", strings.Join(allowIDs, ", "))
	}
	if d.PolicyIDs == nil {
		d.PolicyIDs = []string{}
	}
	slices.Sort(d.PolicyIDs)
	return d
}

// explain is the one-line message for a forbid: its @reason annotation if
// any, and what it matched.
func (e *Engine) explain(id string, r Request) string {
	msg := fmt.Sprintf("policy %q forbids %s on %s", id, r.Action, r.Resource)
	if p := e.set.Get(cedar.PolicyID(id)); p != nil {
		if why, ok := p.Annotations()["reason"]; ok && why != "" {
			msg = fmt.Sprintf("%s (policy %q: %s on %s)", oneLine(string(why)), id, r.Action, r.Resource)
		}
	}
	return msg
}

// appendUniq appends the xs not yet in dst.
func appendUniq(dst []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(dst, x) {
			dst = append(dst, x)
		}
	}
	return dst
}
