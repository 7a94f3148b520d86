// Package pic verifies PIC (Provenance & Intent Contracts) action proposals
// at the tool boundary: the JSON contract an agent attaches to a tool call
// (under "__pic" in the call's arguments) to say what it intends, what impact
// the call has, which inputs influenced it and which evidence backs its
// claims.
//
// It implements the PIC/1.0 proposal schema, the verifier's causal contract
// (high-impact actions need a claim backed by trusted provenance), tool
// binding, hash evidence over files inside an evidence root and Ed25519
// signature evidence (legacy raw-payload and canonical PIC-ATT/1.0
// attestation modes) against a keyring, with the reference SDK's DoS limits.
// Where PIC 0.9 changed v0.8.2's semantics it follows 0.9: inbound trust is
// always sanitized to "untrusted" (strict trust), only verified signature
// evidence makes provenance trusted (hash evidence proves integrity only),
// sha256 values are lowercase hex, "semi_trusted" is gone, and duplicate
// provenance or evidence ids are refused (PIC_DUPLICATE_ID). Docket adds one
// rule of its own: the proposal's action.args must equal the arguments of
// the call it is attached to (PIC_ARGS_MISMATCH).
//
// Every failure is an [*Error] with a PIC error code; a caller gating a tool
// call must treat any error as a deny.
package pic

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docketlog/docket/internal/strictjson"
)

// Error codes, as the PIC reference SDK names them.
const (
	CodeSchemaInvalid       = "PIC_SCHEMA_INVALID"
	CodeVerifierFailed      = "PIC_VERIFIER_FAILED"
	CodeToolBindingMismatch = "PIC_TOOL_BINDING_MISMATCH"
	CodeEvidenceFailed      = "PIC_EVIDENCE_FAILED"
	CodeLimitExceeded       = "PIC_LIMIT_EXCEEDED"
	CodeDuplicateID         = "PIC_DUPLICATE_ID"
	CodeArgsMismatch        = "PIC_ARGS_MISMATCH"
)

// Error is a verification failure: Code is one of the Code constants.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func fail(code, format string, a ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// Impact classes. Money, irreversible and privacy are high impact: they
// need a claim backed by trusted provenance.
var impacts = map[string]bool{
	"read": false, "write": false, "external": false, "compute": false,
	"irreversible": true, "money": true, "privacy": true,
}

// HighImpact reports whether impact is a class that needs trusted evidence.
func HighImpact(impact string) bool { return impacts[impact] }

// Limits bound the work one proposal can cause (the reference SDK's
// PICEvaluateLimits and evidence caps). Zero fields take the defaults.
type Limits struct {
	MaxProposalBytes int           // the proposal's JSON; default 64,000
	MaxItems         int           // provenance, claims and evidence entries each; default 64
	MaxFileBytes     int64         // one evidence file; default 5 MiB
	MaxPayloadBytes  int           // one signed payload, raw and canonical; default 16 KiB
	Budget           time.Duration // the whole verification; default 500ms
}

func (l Limits) withDefaults() Limits {
	if l.MaxProposalBytes <= 0 {
		l.MaxProposalBytes = 64_000
	}
	if l.MaxItems <= 0 {
		l.MaxItems = 64
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 5 << 20
	}
	if l.MaxPayloadBytes <= 0 {
		l.MaxPayloadBytes = 16 << 10
	}
	if l.Budget <= 0 {
		l.Budget = 500 * time.Millisecond
	}
	return l
}

// Options configure a verification.
type Options struct {
	// Tool is the tool the proposal is attached to; the proposal's
	// action.tool must equal it exactly. Empty skips tool binding (offline use).
	Tool string
	// Args, when not nil, are the call's arguments (without __pic): the
	// proposal's action.args must equal them (compared in JCS form).
	Args map[string]any
	// EvidenceRoot is the directory file:// hash evidence is resolved in;
	// nothing outside it (by "..", absolute path or symlink) is read. Empty
	// means hash evidence cannot be verified and fails.
	EvidenceRoot string
	// Keys verify signature evidence; nil means signature evidence fails.
	Keys   *Keyring
	Limits Limits
	// Now is the clock for key and attestation expiry; nil means time.Now.
	Now func() time.Time
}

// Result is a verified proposal.
type Result struct {
	Impact string
	Tool   string
	// Digest is "sha256:" + hex SHA-256 of the proposal's JCS form: what a
	// receipt records to tie the call to its proposal and evidence.
	Digest string
	// Verified lists the ids of every evidence entry that verified;
	// Trusted those that made provenance trusted (signature evidence).
	Verified []string
	Trusted  []string
	// TrustedClaims reports whether some claim cites trusted provenance.
	TrustedClaims bool
}

// Verify parses and verifies a proposal (strictly: duplicate keys, invalid
// UTF-8 and lone surrogates are refused). Any error means the proposal does
// not back the call.
func Verify(ctx context.Context, data []byte, o Options) (*Result, error) {
	l := o.Limits.withDefaults()
	if len(data) > l.MaxProposalBytes {
		return nil, fail(CodeLimitExceeded, "proposal is %d bytes, limit %d", len(data), l.MaxProposalBytes)
	}
	v, err := strictjson.Parse(data)
	if err != nil {
		return nil, fail(CodeSchemaInvalid, "proposal: %v", err)
	}
	return VerifyValue(ctx, v, o)
}

// VerifyValue is Verify for a proposal already parsed by strictjson.Parse.
func VerifyValue(ctx context.Context, v any, o Options) (*Result, error) {
	start := time.Now()
	l := o.Limits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, l.Budget)
	defer cancel()
	if o.Now == nil {
		o.Now = time.Now
	}
	canon, err := strictjson.Canonicalize(v)
	if err == nil {
		// Members whose names differ only in case would mean one thing
		// here and another to a server that decodes without regard to
		// case.
		err = strictjson.CheckFold(v)
	}
	if err != nil {
		return nil, fail(CodeSchemaInvalid, "proposal: %v", err)
	}
	if len(canon) > l.MaxProposalBytes {
		return nil, fail(CodeLimitExceeded, "proposal is %d bytes, limit %d", len(canon), l.MaxProposalBytes)
	}
	p, err := parseProposal(v, l)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	r := &Result{Impact: p.impact, Tool: p.tool, Digest: "sha256:" + hex.EncodeToString(sum[:])}

	// Evidence first: trust is an output of verification (PIC 0.9 strict
	// trust), never taken from the proposal.
	trusted := map[string]bool{}
	for _, ev := range p.evidence {
		if err := ctx.Err(); err != nil {
			return nil, fail(CodeLimitExceeded, "verification exceeded its time budget of %v", l.Budget)
		}
		upgrades, err := verifyEvidence(ctx, ev, p, o, l)
		if ctx.Err() != nil {
			return nil, fail(CodeLimitExceeded, "verification exceeded its time budget of %v", l.Budget)
		}
		if err != nil {
			return nil, fail(CodeEvidenceFailed, "evidence %q: %v", ev.id, err)
		}
		r.Verified = append(r.Verified, ev.id)
		if upgrades {
			r.Trusted = append(r.Trusted, ev.id)
			trusted[ev.id] = true
		}
	}
	provIDs := map[string]bool{}
	for _, id := range p.provenance {
		provIDs[id] = true
	}
	for _, c := range p.claims {
		for _, id := range c {
			if provIDs[id] && trusted[id] {
				r.TrustedClaims = true
			}
		}
	}
	if HighImpact(p.impact) && !r.TrustedClaims {
		return nil, fail(CodeVerifierFailed, "a %s action needs a claim backed by trusted provenance (verified signature evidence)", p.impact)
	}
	if o.Tool != "" && p.tool != o.Tool {
		return nil, fail(CodeToolBindingMismatch, "proposal is for tool %q, the call is to %q", p.tool, o.Tool)
	}
	if o.Args != nil {
		want, err := strictjson.Canonicalize(o.Args)
		if err != nil {
			return nil, fail(CodeArgsMismatch, "call arguments: %v", err)
		}
		got, _ := strictjson.Canonicalize(p.args)
		if string(got) != string(want) {
			return nil, fail(CodeArgsMismatch, "the proposal's action.args are not the call's arguments")
		}
	}
	if time.Since(start) > l.Budget || ctx.Err() != nil {
		return nil, fail(CodeLimitExceeded, "verification exceeded its time budget of %v", l.Budget)
	}
	slices.Sort(r.Trusted)
	return r, nil
}

// proposal is a schema-valid proposal.
type proposal struct {
	intent, impact, tool string
	args                 map[string]any
	provenance           []string   // ids, in order
	claims               [][]string // evidence ids of each claim
	claimsValue          any
	evidence             []evidence
}

type evidence struct {
	id, typ, ref string
	sha256       string // hash
	payload      string // sig
	signature    string
	keyID        string
}

var errNotString = errors.New("not a string")

// parseProposal checks v against the PIC/1.0 proposal schema (with 0.9's
// changes) and the limits.
func parseProposal(v any, l Limits) (*proposal, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fail(CodeSchemaInvalid, "proposal is not an object")
	}
	if err := onlyKeys(m, "", []string{"protocol", "intent", "impact", "provenance", "claims", "action"}, "evidence"); err != nil {
		return nil, err
	}
	p := &proposal{}
	if s, _ := m["protocol"].(string); s != "PIC/1.0" {
		return nil, fail(CodeSchemaInvalid, `protocol must be "PIC/1.0"`)
	}
	var err error
	if p.intent, err = str(m, "intent"); err != nil {
		return nil, err
	}
	if p.impact, err = str(m, "impact"); err != nil {
		return nil, err
	}
	if _, ok := impacts[p.impact]; !ok {
		return nil, fail(CodeSchemaInvalid, "impact %q is not a PIC impact class", p.impact)
	}
	prov, err := array(m, "provenance", l.MaxItems)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, e := range prov {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fail(CodeSchemaInvalid, "provenance[%d] is not an object", i)
		}
		if err := onlyKeys(o, fmt.Sprintf("provenance[%d]", i), []string{"id", "trust"}, "source"); err != nil {
			return nil, err
		}
		id, err := str(o, "id")
		if err != nil {
			return nil, err
		}
		trust, err := str(o, "trust")
		if err != nil {
			return nil, err
		}
		if trust != "trusted" && trust != "untrusted" {
			return nil, fail(CodeSchemaInvalid, "provenance[%d].trust %q is not trusted or untrusted", i, trust)
		}
		if _, ok := o["source"]; ok {
			if _, err := str(o, "source"); err != nil {
				return nil, err
			}
		}
		if seen[id] {
			return nil, fail(CodeDuplicateID, "provenance id %q appears twice", id)
		}
		seen[id] = true
		p.provenance = append(p.provenance, id)
	}
	claims, err := array(m, "claims", l.MaxItems)
	if err != nil {
		return nil, err
	}
	p.claimsValue = m["claims"]
	for i, e := range claims {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fail(CodeSchemaInvalid, "claims[%d] is not an object", i)
		}
		if err := onlyKeys(o, fmt.Sprintf("claims[%d]", i), []string{"text", "evidence"}); err != nil {
			return nil, err
		}
		if _, err := str(o, "text"); err != nil {
			return nil, err
		}
		ids, err := array(o, "evidence", l.MaxItems)
		if err != nil {
			return nil, err
		}
		var c []string
		for _, id := range ids {
			s, ok := id.(string)
			if !ok {
				return nil, fail(CodeSchemaInvalid, "claims[%d].evidence holds a non-string", i)
			}
			c = append(c, s)
		}
		p.claims = append(p.claims, c)
	}
	action, ok := m["action"].(map[string]any)
	if !ok {
		return nil, fail(CodeSchemaInvalid, "action is not an object")
	}
	if err := onlyKeys(action, "action", []string{"tool", "args"}); err != nil {
		return nil, err
	}
	if p.tool, err = str(action, "tool"); err != nil {
		return nil, err
	}
	if p.args, ok = action["args"].(map[string]any); !ok {
		return nil, fail(CodeSchemaInvalid, "action.args is not an object")
	}
	if _, ok := m["evidence"]; !ok {
		return p, nil
	}
	evs, err := array(m, "evidence", l.MaxItems)
	if err != nil {
		return nil, err
	}
	seenEv := map[string]bool{}
	for i, e := range evs {
		ev, err := parseEvidence(e, i)
		if err != nil {
			return nil, err
		}
		if seenEv[ev.id] {
			return nil, fail(CodeDuplicateID, "evidence id %q appears twice", ev.id)
		}
		seenEv[ev.id] = true
		p.evidence = append(p.evidence, ev)
	}
	return p, nil
}

func parseEvidence(e any, i int) (evidence, error) {
	o, ok := e.(map[string]any)
	if !ok {
		return evidence{}, fail(CodeSchemaInvalid, "evidence[%d] is not an object", i)
	}
	where := fmt.Sprintf("evidence[%d]", i)
	var ev evidence
	var err error
	ev.typ, _ = o["type"].(string)
	switch ev.typ {
	case "hash":
		if err := onlyKeys(o, where, []string{"id", "type", "ref", "sha256"}, "attestor"); err != nil {
			return ev, err
		}
		if ev.sha256, err = str(o, "sha256"); err != nil {
			return ev, err
		}
		if len(ev.sha256) != 64 || !isLowerHex(ev.sha256) {
			return ev, fail(CodeSchemaInvalid, "%s.sha256 is not 64 lowercase hex digits", where)
		}
	case "sig":
		if err := onlyKeys(o, where, []string{"id", "type", "ref", "payload", "alg", "signature", "key_id"}, "signer", "attestor"); err != nil {
			return ev, err
		}
		if alg, _ := o["alg"].(string); alg != "ed25519" {
			return ev, fail(CodeSchemaInvalid, `%s.alg must be "ed25519"`, where)
		}
		if ev.payload, err = str(o, "payload"); err != nil {
			return ev, err
		}
		if ev.signature, err = str(o, "signature"); err != nil {
			return ev, err
		}
		if ev.keyID, err = str(o, "key_id"); err != nil {
			return ev, err
		}
	default:
		return ev, fail(CodeSchemaInvalid, "%s.type must be hash or sig", where)
	}
	for _, k := range []string{"signer", "attestor"} {
		if _, ok := o[k]; ok {
			if _, err := str(o, k); err != nil {
				return ev, err
			}
		}
	}
	if ev.id, err = str(o, "id"); err != nil {
		return ev, err
	}
	if ev.ref, err = str(o, "ref"); err != nil {
		return ev, err
	}
	return ev, nil
}

// onlyKeys checks that o has every required key and no key outside
// required and optional.
func onlyKeys(o map[string]any, where string, required []string, optional ...string) error {
	for _, k := range required {
		if _, ok := o[k]; !ok {
			return fail(CodeSchemaInvalid, "%s: %q is required", name(where), k)
		}
	}
	for k := range o {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return fail(CodeSchemaInvalid, "%s: unknown member %q", name(where), k)
		}
	}
	return nil
}

func name(where string) string {
	if where == "" {
		return "proposal"
	}
	return where
}

func str(o map[string]any, k string) (string, error) {
	s, ok := o[k].(string)
	if !ok {
		return "", fail(CodeSchemaInvalid, "%q: %v", k, errNotString)
	}
	return s, nil
}

func array(o map[string]any, k string, max int) ([]any, error) {
	a, ok := o[k].([]any)
	if !ok {
		return nil, fail(CodeSchemaInvalid, "%q is not an array", k)
	}
	if len(a) > max {
		return nil, fail(CodeLimitExceeded, "%q has %d entries, limit %d", k, len(a), max)
	}
	return a, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
