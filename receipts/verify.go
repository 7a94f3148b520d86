package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// An Outcome is the result of verifying a receipt, as the draft defines it.
type Outcome int

const (
	// Valid: every check ran and passed.
	Valid Outcome = iota
	// Invalid: a check ran and failed.
	Invalid
	// Undecidable: a check could not run (no trusted key, unknown shape,
	// malformed input, unsupported algorithm). Never to be read as valid.
	Undecidable
)

func (o Outcome) String() string {
	switch o {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	default:
		return "undecidable"
	}
}

// MarshalText encodes the outcome as its name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText decodes an outcome's name.
func (o *Outcome) UnmarshalText(b []byte) error {
	for _, c := range []Outcome{Valid, Invalid, Undecidable} {
		if string(b) == c.String() {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("unknown outcome %q", b)
}

// Causes name why a receipt is invalid or undecidable.
const (
	CauseMalformed        = "malformed"          // undecidable: not strict JSON
	CauseUnknownShape     = "unknown_shape"      // undecidable
	CauseUnsupportedAlg   = "unsupported_alg"    // undecidable
	CauseNoTrustedKey     = "no_trusted_key"     // undecidable
	CauseEmbeddedKeyOnly  = "embedded_key_only"  // undecidable: the only key is inside the receipt
	CauseBadSignature     = "bad_signature"      // invalid
	CauseKIDMismatch      = "kid_mismatch"       // invalid
	CauseKeyOutsideWindow = "key_outside_window" // invalid
	CauseUnsignedMember   = "unsigned_member"    // invalid: a draft-04 envelope with a member the signature does not cover
	CausePolicyDigest     = "policy_digest_mismatch"
	CauseSession          = "session_mismatch"
	CauseChainBreak       = "chain_break"
	CauseSequence         = "sequence_gap"
	CauseUnlinkedExec     = "unlinked_execution"
)

// A Result is the verification result of one receipt.
type Result struct {
	Outcome Outcome `json:"outcome"`
	// Cause is one of the Cause constants when Outcome is not Valid.
	Cause string `json:"cause,omitempty"`
	// Detail explains the cause for people.
	Detail string `json:"detail,omitempty"`
	// Shape is "envelope", "flat", "v1-artifact" or "v2-artifact".
	Shape string `json:"shape,omitempty"`
	KID   string `json:"kid,omitempty"`
	// Hash is the chain hash of the receipt: "sha256:" + hex SHA-256 of JCS(receipt).
	Hash string `json:"hash,omitempty"`
	// Legacy names a convention of an earlier draft the receipt was accepted
	// under (a bare-hex or payload-only chain link, a null genesis link).
	Legacy string `json:"legacy,omitempty"`
	// Key is the trusted key the signature was checked with, if one was found.
	Key ed25519.PublicKey `json:"-"`
}

func (r *Result) fail(o Outcome, cause, format string, args ...any) {
	if r.Outcome != Valid {
		return // keep the first failure
	}
	r.Outcome, r.Cause, r.Detail = o, cause, fmt.Sprintf(format, args...)
}

// Options says what a verifier trusts and expects.
type Options struct {
	// Keys are the trusted issuer keys. Without them every receipt is undecidable.
	Keys *KeySet
	// PolicyDigest, if set, is the policy digest every receipt must carry.
	PolicyDigest string
	// SessionID, if set, is the session every receipt must belong to.
	SessionID string
	// Known, if set, reports whether the caller has already verified the
	// signature of the receipt with chain hash hash (the SHA-256 of its
	// JCS form, so of the very bytes signed) under pub, as an auditor has
	// for the log entries it read before; the Ed25519 verification is then
	// not repeated. Every other check is.
	Known func(hash string, pub ed25519.PublicKey) bool
}

// receipt is a parsed receipt of any supported shape.
type receipt struct {
	shape        string
	top          map[string]any // the whole receipt
	payload      map[string]any // the members that carry chain fields
	signingInput []byte
	sig          []byte
	kid          string
	hash         string   // sha256 of JCS(whole receipt)
	sum          [32]byte // that SHA-256
	embeddedKey  bool
	// unsigned names the first member of an envelope that the signature
	// does not cover and the envelope does not allow (see unsignedMember),
	// or describes a sig that is not 128 lowercase hex characters.
	unsigned string
}

// parseReceipt recognizes the shape of a receipt. A non-empty cause means
// the receipt could not be parsed; r.hash is set whenever the JSON was valid.
func parseReceipt(data []byte) (rc receipt, cause, detail string) {
	obj, canonical, members, asciiKeys, err := parseSpansKeys(data)
	if err != nil {
		return rc, CauseMalformed, err.Error()
	}
	if !asciiKeys {
		return rc, CauseMalformed, "non-ASCII object key: receipts allow only ASCII keys"
	}
	// Input already in JCS form (as Docket writes it) is its own canonical
	// form, and an envelope's payload is a slice of it.
	if !canonical {
		return receiptOf(obj, nil, nil)
	}
	var payload []byte
	if span, ok := members["payload"]; ok {
		payload = data[span[0]:span[1]:span[1]]
	}
	return receiptOf(obj, data, payload)
}

// receiptOf recognizes the shape of a parsed receipt. whole and payloadJCS
// are the JCS forms of the receipt and of its payload member when the caller
// already has them, or nil. An envelope's canonical form is otherwise
// assembled from its members', so that the payload (the signing input) is
// canonicalized once.
func receiptOf(obj map[string]any, whole, payloadJCS []byte) (rc receipt, cause, detail string) {
	var err error
	payload, okPayload := obj["payload"].(map[string]any)
	sigObj, okSig := obj["signature"].(map[string]any)
	// A draft-04 envelope with extra members is still recognized as one, so
	// that it is refused for them rather than passed over as another shape.
	envelope := okPayload && okSig && (len(obj) == 2 || payload["spec"] == Spec)
	if envelope {
		if rc.signingInput = payloadJCS; rc.signingInput == nil {
			if rc.signingInput, err = Canonicalize(payload); err != nil {
				return rc, CauseMalformed, err.Error()
			}
		}
	}
	switch {
	case whole != nil:
	case envelope:
		sigJCS, err := Canonicalize(sigObj)
		if err != nil {
			return rc, CauseMalformed, err.Error()
		}
		whole = make([]byte, 0, len(rc.signingInput)+len(sigJCS)+26)
		whole = append(append(append(whole, `{"payload":`...), rc.signingInput...), `,"signature":`...)
		whole = append(append(whole, sigJCS...), '}')
	default:
		if whole, err = Canonicalize(obj); err != nil {
			return rc, CauseMalformed, err.Error()
		}
	}
	rc.sum, rc.top = sha256.Sum256(whole), obj
	rc.hash = "sha256:" + hex.EncodeToString(rc.sum[:])
	switch sig := obj["signature"].(type) {
	case map[string]any:
		if rc.signingInput == nil {
			return rc, CauseUnknownShape, "an envelope has exactly the members payload (an object) and signature"
		}
		rc.shape, rc.payload = "envelope", payload
		if alg, _ := sig["alg"].(string); alg != "EdDSA" {
			return rc, CauseUnsupportedAlg, fmt.Sprintf("signature alg %q, want EdDSA", sig["alg"])
		}
		rc.kid, _ = sig["kid"].(string)
		s, _ := sig["sig"].(string)
		if rc.sig, err = hex.DecodeString(s); err != nil || len(rc.sig) != ed25519.SignatureSize || !isHex(s) {
			rc.sig = nil // checked as a bad signature
		}
		_, rc.embeddedKey = payload["public_key"]
		rc.unsigned = unsignedMember(obj, sig)
	case string:
		rest := make(map[string]any, len(obj))
		for k, v := range obj {
			if k != "signature" {
				rest[k] = v
			}
		}
		rc.shape, rc.payload = "flat", rest
		switch obj["v"] {
		case json.Number("1"):
			rc.shape = "v1-artifact"
		case json.Number("2"):
			rc.shape = "v2-artifact"
			if p, ok := obj["payload"].(map[string]any); ok {
				rc.payload = p
			}
		}
		if alg, ok := obj["algorithm"]; ok && alg != "ed25519" && alg != "Ed25519" && alg != "EdDSA" {
			return rc, CauseUnsupportedAlg, fmt.Sprintf("algorithm %q, want ed25519", alg)
		}
		rc.kid, _ = obj["kid"].(string)
		if rc.kid == "" {
			rc.kid, _ = obj["issuer_key_id"].(string) // TRACE action receipts
		}
		rc.sig = decodeSig(sig)
		if rc.signingInput, err = Canonicalize(rest); err != nil {
			return rc, CauseMalformed, err.Error()
		}
		_, rc.embeddedKey = obj["public_key"]
	default:
		return rc, CauseUnknownShape, "no signature member: not a signed receipt"
	}
	return rc, "", ""
}

// unsignedMember returns "" for an envelope that has exactly the members
// payload and signature, and a signature of exactly alg, kid and sig, with
// sig 128 lowercase hex characters: the one byte form of a signed receipt.
// Otherwise it names what the signature does not cover, so that one signed
// receipt cannot be logged, or chained, in many forms.
func unsignedMember(obj, sig map[string]any) string {
	if k, ok := firstOther(obj, "payload", "signature"); ok {
		return fmt.Sprintf("member %q", k)
	}
	if k, ok := firstOther(sig, "alg", "kid", "sig"); ok {
		return fmt.Sprintf("member %q of signature", k)
	}
	if _, ok := sig["kid"].(string); !ok {
		return `signature member "kid" (missing or not a string)`
	}
	s, _ := sig["sig"].(string)
	if len(s) != 2*ed25519.SignatureSize || !isHex(s) {
		return `signature member "sig" (not 128 lowercase hex characters)`
	}
	return ""
}

// firstOther returns the first name of m, in sorted order, that is not
// one of names, and whether there is one; it sorts only when there is.
func firstOther(m map[string]any, names ...string) (string, bool) {
	for k := range m {
		if !slices.Contains(names, k) {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if !slices.Contains(names, k) {
					return k, true
				}
			}
		}
	}
	return "", false
}

// decodeSig accepts a 64-byte signature as hex, base64url or base64.
func decodeSig(s string) []byte {
	if b, err := hex.DecodeString(s); err == nil && len(b) == ed25519.SignatureSize {
		return b
	}
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.URLEncoding, base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.SignatureSize {
			return b
		}
	}
	return nil
}

// Verify verifies one receipt on its own: shape, key, signature, key window,
// and the expectations in opts. Chain links are checked by VerifyChain.
func Verify(data []byte, opts Options) Result {
	_, r := verifyOne(data, opts)
	return r
}

func verifyOne(data []byte, opts Options) (receipt, Result) {
	rc, cause, detail := parseReceipt(data)
	return rc, check(rc, cause, detail, opts)
}

// check verifies a receipt parseReceipt returned.
func check(rc receipt, cause, detail string, opts Options) Result {
	r := Result{Shape: rc.shape, KID: rc.kid, Hash: rc.hash}
	if cause != "" {
		r.fail(Undecidable, cause, "%s", detail)
		return r
	}
	if rc.unsigned != "" && rc.payload["spec"] == Spec {
		r.fail(Invalid, CauseUnsignedMember, "draft-04 envelope with %s, which the signature does not cover", rc.unsigned)
		return r
	}
	key, ok := opts.Keys.lookup(rc.kid)
	if !ok {
		if rc.embeddedKey {
			r.fail(Undecidable, CauseEmbeddedKeyOnly, "the only key is embedded in the receipt, which proves nothing; supply the issuer's key")
		} else {
			r.fail(Undecidable, CauseNoTrustedKey, "no trusted key for kid %q", rc.kid)
		}
		return r
	}
	r.Key = key.Public
	// Draft-04 binds the kid to the key and the issuer_id to the kid; earlier
	// drafts derived kids differently, so only draft-04 receipts are held to it.
	if rc.payload["spec"] == Spec {
		if rc.kid != opts.Keys.kid(key) {
			r.fail(Invalid, CauseKIDMismatch, "kid %q is not the trusted key's kid %q", rc.kid, KID(key.Public))
			return r
		}
		if iss, _ := rc.payload["issuer_id"].(string); rc.shape == "envelope" && iss != rc.kid {
			r.fail(Invalid, CauseKIDMismatch, "payload issuer_id %q differs from signature kid %q", iss, rc.kid)
			return r
		}
	}
	if rc.sig == nil || !(opts.Known != nil && rc.hash != "" && opts.Known(rc.hash, key.Public)) && !verifyEd25519(key.Public, rc.signingInput, rc.sig) {
		r.fail(Invalid, CauseBadSignature, "Ed25519 signature does not verify with the trusted key")
		return r
	}
	if !key.ValidFrom.IsZero() || !key.ValidUntil.IsZero() {
		at, err := issuedAt(rc)
		switch {
		case err != nil:
			r.fail(Invalid, CauseKeyOutsideWindow, "key has a validity window but the receipt's time is unreadable: %v", err)
		case !key.ValidFrom.IsZero() && at.Before(key.ValidFrom), !key.ValidUntil.IsZero() && at.After(key.ValidUntil):
			r.fail(Invalid, CauseKeyOutsideWindow, "issued at %s, outside the key's validity window", at.Format(time.RFC3339))
		}
	}
	if d, _ := rc.payload["policy_digest"].(string); opts.PolicyDigest != "" && d != opts.PolicyDigest {
		r.fail(Invalid, CausePolicyDigest, "policy_digest %q, want %q", d, opts.PolicyDigest)
	}
	if s, _ := rc.payload["session_id"].(string); opts.SessionID != "" && s != opts.SessionID {
		r.fail(Invalid, CauseSession, "session_id %q, want %q", s, opts.SessionID)
	}
	return r
}

func issuedAt(rc receipt) (time.Time, error) {
	for _, m := range []map[string]any{rc.payload, rc.top} {
		for _, k := range []string{"issued_at", "timestamp"} {
			if s, ok := m[k].(string); ok {
				return time.Parse(time.RFC3339, s)
			}
		}
	}
	return time.Time{}, fmt.Errorf("no issued_at")
}

// VerifyChain verifies receipts that form one chain, in chain order: each
// receipt as Verify does, then every link. Receipts are verified in parallel
// on all CPUs; the result for receipts[i] is at index i.
//
// Links are checked with the draft-04 rule (previousReceiptHash = "sha256:" +
// hex SHA-256 of JCS(whole previous receipt)); bare-hex links (draft-02),
// payload-only links (draft-01 and the flat shape's parent_receipt_hash) and
// null genesis links are accepted but reported in Result.Legacy. Consecutive
// sequence numbers, a single session, and the link from every execution
// receipt to an earlier allow decision are checked too.
func VerifyChain(receipts [][]byte, opts Options) []Result {
	facts := make([]links, len(receipts))
	results := make([]Result, len(receipts))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(receipts)/64))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(receipts)/workers, (w+1)*len(receipts)/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				var rc receipt
				rc, results[i] = verifyOne(receipts[i], opts)
				facts[i] = linksOf(&rc)
			}
		})
	}
	wg.Wait()
	checkLinks(facts, results)
	return results
}

// links is what checkLinks needs of one receipt, so that verifying a long
// chain does not keep every parsed receipt alive.
type links struct {
	parsed                bool
	hash                  string
	signingInput          []byte // for payload-only links, hashed only when needed
	link                  any
	hasLink               bool
	seq                   int64
	hasSeq                bool
	session               string
	hasSession            bool
	hookEvent, decision   string
	toolName, reason, ref string
	hasRef                bool
	unenforced            bool
}

func linksOf(rc *receipt) links {
	if rc.payload == nil {
		return links{}
	}
	p := rc.payload
	l := links{parsed: true, hash: rc.hash, signingInput: rc.signingInput}
	if l.link, l.hasLink = p["previousReceiptHash"]; !l.hasLink {
		l.link, l.hasLink = p["parent_receipt_hash"]
	}
	l.seq, l.hasSeq = number(p["sequence"])
	l.session, l.hasSession = p["session_id"].(string)
	l.hookEvent, _ = p["hook_event"].(string)
	l.decision, _ = p["decision"].(string)
	l.toolName, _ = p["tool_name"].(string)
	l.reason, _ = p["reason"].(string)
	l.ref, l.hasRef = p["decision_receipt_hash"].(string)
	l.unenforced = p["enforced"] == false
	return l
}

func checkLinks(facts []links, results []Result) {
	decisions := make(map[string]int) // chain hash → index, for decisions an execution may follow
	for i := range facts {
		rc, r := &facts[i], &results[i]
		if !rc.parsed {
			continue // unparseable: already undecidable
		}
		if i == 0 {
			if rc.hasLink && rc.link == nil {
				r.Legacy = "null genesis link (draft-01)"
			}
		} else if prev := &facts[i-1]; prev.hash != "" {
			s, _ := rc.link.(string)
			switch {
			case !rc.hasLink || rc.link == nil:
				r.fail(Invalid, CauseChainBreak, "no link to the previous receipt (receipt %d)", i)
			case s == prev.hash:
			case s == strings.TrimPrefix(prev.hash, "sha256:"):
				r.Legacy = "bare-hex chain link (draft-02)"
			case prev.signingInput != nil && (s == sha256Ref(prev.signingInput) || s == strings.TrimPrefix(sha256Ref(prev.signingInput), "sha256:")):
				r.Legacy = "payload-only chain link (draft-01 / flat parent_receipt_hash)"
			default:
				r.fail(Invalid, CauseChainBreak, "previous-receipt link %q does not match the previous receipt %s", s, prev.hash)
			}
			if rc.hasSeq && prev.hasSeq && rc.seq != prev.seq+1 {
				r.fail(Invalid, CauseSequence, "sequence %d follows %d", rc.seq, prev.seq)
			}
			if rc.hasSession && prev.hasSession && rc.session != prev.session {
				r.fail(Invalid, CauseSession, "session_id %q follows %q in one chain", rc.session, prev.session)
			}
		}
		step := Step{HookEvent: rc.hookEvent, Decision: rc.decision, ToolName: rc.toolName, Unenforced: rc.unenforced}
		if step.Executable() {
			decisions[rc.hash] = i
		}
		if !rc.hasRef && step.IsExecution() {
			r.fail(Invalid, CauseUnlinkedExec, "a tool ran with no decision linked to it (%s)", rc.reason)
		}
		if rc.hasRef {
			j, found := decisions[rc.ref]
			switch {
			case !found:
				r.fail(Invalid, CauseUnlinkedExec, "execution does not follow an allow decision in this chain (decision_receipt_hash %s)", rc.ref)
			case !(Step{HookEvent: PostToolUse, Decision: rc.decision, ToolName: rc.toolName}).Executes(Step{HookEvent: facts[j].hookEvent, Decision: facts[j].decision, ToolName: facts[j].toolName, Unenforced: facts[j].unenforced}):
				r.fail(Invalid, CauseUnlinkedExec, "execution does not match the decision in receipt %d", j+1)
			}
		}
	}
}

func number(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// SplitLines splits a JSONL chain file into its non-blank lines.
func SplitLines(data []byte) [][]byte {
	var out [][]byte
	for line := range bytes.Lines(data) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}
