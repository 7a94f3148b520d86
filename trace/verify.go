package trace

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// Freshness bounds of trace-v0.2 §3.2.2.
const (
	DefaultMaxAge = 24 * time.Hour
	DefaultSkew   = 5 * time.Minute
)

// Causes of a check that is not valid, beside the receipts.Cause* ones.
const (
	CauseProfile        = "profile"                 // invalid: not the trace-v0.2 profile
	CauseSchema         = "schema"                  // invalid: not a schema-valid trace-v0.2 record
	CauseUnsigned       = "unsigned"                // invalid: no embedded signature
	CauseUntrustedKey   = "untrusted_key"           // undecidable: cnf.jwk is not a trusted key
	CauseLegacyCanon    = "legacy_canonicalization" // invalid: signed over json.dumps(sort_keys=True) bytes
	CauseStale          = "stale"                   // invalid: iat older than the maximum age
	CauseFuture         = "future"                  // invalid: iat later than now plus the skew
	CauseMissing        = "missing"                 // undecidable: the evidence was not given
	CauseTranscriptHash = "transcript_hash"         // invalid: the transcript bytes do not hash to the record's
	CauseCallCount      = "call_count"              // invalid: the transcript holds another number of calls
	CauseTranscript     = "transcript_mismatch"     // invalid: the transcript is not the one of the receipts
	CauseNotAnchored    = "not_anchored"            // invalid: the record names no log proof
	CauseIssuer         = "issuer_mismatch"         // invalid: the receipts are not the record signer's
)

// Options says what Verify trusts and what evidence it checks.
type Options struct {
	// Keys are the trusted keys; cnf.jwk must be one of them. They also
	// verify the receipts of the chain.
	Keys *receipts.KeySet
	// Now is the verification time; zero means time.Now.
	Now time.Time
	// MaxAge bounds the age of iat: 0 means DefaultMaxAge, negative no bound.
	// Skew is the allowed clock skew: 0 means DefaultSkew.
	MaxAge, Skew time.Duration
	// Transcript is the transcript's raw bytes, as served. Nil: the record's
	// tool_transcript cannot be checked (undecidable).
	Transcript []byte
	// Chain is the session chain, a receipt per element. Nil: the receipts
	// behind the transcript cannot be checked (undecidable).
	Chain [][]byte
	// Proofs, when set, checks Proof, the c2sp.org/tlog-proof@v1 of the
	// chain's last receipt. Nil: transparency is not checked.
	Proofs *c2sp.ProofVerifier
	Proof  []byte
}

// A Check is the outcome of one verification step.
type Check struct {
	Name    string           `json:"check"`
	Outcome receipts.Outcome `json:"outcome"`
	Cause   string           `json:"cause,omitempty"`
	Detail  string           `json:"detail,omitempty"`
}

// A Report is the result of Verify: the record's outcome is the worst of
// its checks (invalid over undecidable over valid).
type Report struct {
	Outcome receipts.Outcome `json:"outcome"`
	Checks  []Check          `json:"checks"`
	// Record is the parsed record, set once its signature verified.
	Record *Record `json:"-"`
	// Calls is the verified transcript.
	Calls []Call `json:"-"`
}

func (r *Report) add(name string, o receipts.Outcome, cause, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Outcome: o, Cause: cause, Detail: fmt.Sprintf(format, args...)})
	if o == receipts.Invalid || o == receipts.Undecidable && r.Outcome == receipts.Valid {
		r.Outcome = o
	}
}

// Verify checks a TRACE Trust Record (trace-v0.2 §3.3): the profile, the
// schema, that cnf.jwk is a trusted key, the Ed25519 signature over the
// RFC 8785 bytes of the record without its signature (naming a signature
// over the older json.dumps(sort_keys=True) bytes as such), freshness; then,
// if the record commits a transcript, the transcript's hash over its raw
// bytes and its call count, the receipts of the chain behind every entry
// and the policy digest they were decided under; and, with opts.Proofs, the
// log proof of the chain's last receipt.
func Verify(data []byte, opts Options) Report {
	var rep Report
	rec, signer, ok := verifyRecord(&rep, data, opts)
	if !ok {
		return rep
	}
	rep.Record = rec
	if rec.ToolTranscript != nil {
		verifyTranscript(&rep, rec, signer, opts)
	}
	if opts.Proofs != nil {
		verifyTransparency(&rep, rec, signer, opts)
	}
	return rep
}

// verifyRecord checks the record itself, and returns it and the key its
// signature verified with (the one trusted key it names), once it did. The
// record is parsed once, strictly: what the signature covers is what the
// rest of the verification reads.
func verifyRecord(rep *Report, data []byte, opts Options) (*Record, ed25519.PublicKey, bool) {
	const name = "signature"
	obj, err := strictjson.ParseObject(data)
	if err == nil {
		// Members whose names differ only in case ("x" and "X" in
		// cnf.jwk) would mean one key to this verifier and another to
		// a decoder that matches names without regard to case.
		err = strictjson.CheckFold(obj)
	}
	if err != nil {
		rep.add(name, receipts.Undecidable, receipts.CauseMalformed, "%v", err)
		return nil, nil, false
	}
	switch p, _ := obj["eat_profile"].(string); p {
	case Profile:
	case "":
		rep.add(name, receipts.Undecidable, receipts.CauseUnknownShape, "no eat_profile: not a TRACE record")
		return nil, nil, false
	case profileV01:
		rep.add(name, receipts.Invalid, CauseProfile, "superseded profile %s: a trace-v0.2 verifier rejects it (records under v0.1 verify with the v0.1 specification)", p)
		return nil, nil, false
	default:
		rep.add(name, receipts.Invalid, CauseProfile, "profile %q is not %s", p, Profile)
		return nil, nil, false
	}
	sigText, _ := obj["signature"].(string)
	if sigText == "" {
		rep.add(name, receipts.Invalid, CauseUnsigned, "no embedded signature: a record without a verifiable signature binding is not a Trust Record (§3.2.2)")
		return nil, nil, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigText)
	if err != nil || len(sig) != ed25519.SignatureSize {
		rep.add(name, receipts.Invalid, receipts.CauseBadSignature, "signature is not a base64url (unpadded) Ed25519 signature")
		return nil, nil, false
	}
	if err := checkSchema(obj); err != nil {
		rep.add(name, receipts.Invalid, CauseSchema, "%v", err)
		return nil, nil, false
	}
	jwk := obj["cnf"].(map[string]any)["jwk"].(map[string]any)
	if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" {
		rep.add(name, receipts.Undecidable, receipts.CauseUnsupportedAlg, "cnf.jwk is kty %v crv %v; only OKP Ed25519 is supported", jwk["kty"], jwk["crv"])
		return nil, nil, false
	}
	x, _ := jwk["x"].(string)
	pub, err := base64.RawURLEncoding.DecodeString(x)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		rep.add(name, receipts.Invalid, CauseSchema, "cnf.jwk.x is not a base64url Ed25519 public key")
		return nil, nil, false
	}
	iat, _ := obj["iat"].(json.Number).Int64()
	issued := time.Unix(iat, 0)
	var key *receipts.Key
	if opts.Keys != nil {
		for i, k := range opts.Keys.Keys {
			if bytes.Equal(k.Public, pub) {
				key = &opts.Keys.Keys[i]
				break
			}
		}
	}
	if key == nil {
		rep.add(name, receipts.Undecidable, CauseUntrustedKey, "cnf.jwk (%s) is not a trusted key: a record cannot vouch for itself", receipts.KID(pub))
		return nil, nil, false
	}
	if !key.ValidFrom.IsZero() && issued.Before(key.ValidFrom) || !key.ValidUntil.IsZero() && issued.After(key.ValidUntil) {
		rep.add(name, receipts.Invalid, receipts.CauseKeyOutsideWindow, "iat %s is outside the key's validity window", issued.UTC().Format(time.RFC3339))
		return nil, nil, false
	}
	delete(obj, "signature")
	msg, err := strictjson.Canonicalize(obj)
	if err != nil {
		rep.add(name, receipts.Undecidable, receipts.CauseMalformed, "%v", err)
		return nil, nil, false
	}
	if !ed25519.Verify(pub, msg, sig) {
		for _, f := range LegacyForms {
			if b, err := f.Marshal(obj); err == nil && ed25519.Verify(pub, b, sig) {
				rep.add(name, receipts.Invalid, CauseLegacyCanon, "signed over the bytes of Python %s, the serialization TRACE signers used before trace-spec 1a3a711, not over RFC 8785 (JCS) bytes as trace-v0.2 §3.2.2 requires; re-sign it with a current signer", f.Python)
				return nil, nil, false
			}
		}
		rep.add(name, receipts.Invalid, receipts.CauseBadSignature, "Ed25519 signature over the RFC 8785 bytes of the record does not verify with %s", receipts.KID(pub))
		return nil, nil, false
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	maxAge, skew := opts.MaxAge, opts.Skew
	if maxAge == 0 {
		maxAge = DefaultMaxAge
	}
	if skew == 0 {
		skew = DefaultSkew
	}
	if issued.After(now.Add(skew)) {
		rep.add(name, receipts.Invalid, CauseFuture, "iat %s is later than now plus %v", issued.UTC().Format(time.RFC3339), skew)
		return nil, nil, false
	}
	if maxAge > 0 && now.Sub(issued) > maxAge {
		rep.add(name, receipts.Invalid, CauseStale, "iat %s is older than the maximum age %v (a record of a past session: verify with a larger maximum age)", issued.UTC().Format(time.RFC3339), maxAge)
		return nil, nil, false
	}
	rec := Record{Signature: sigText}
	if err := strictjson.Decode(obj, &rec, strictjson.IgnoreUnknown); err != nil {
		rep.add(name, receipts.Invalid, CauseSchema, "%v", err)
		return nil, nil, false
	}
	rep.add(name, receipts.Valid, "", "Ed25519 over RFC 8785 by %s, issued %s", receipts.KID(pub), issued.UTC().Format(time.RFC3339))
	return &rec, pub, true
}

// verifyTranscript checks the transcript's hash, its call count, and the
// receipts behind it, which must all be signed by signer, the key the
// record's signature verified with.
func verifyTranscript(rep *Report, rec *Record, signer ed25519.PublicKey, opts Options) {
	tt := rec.ToolTranscript
	if opts.Transcript == nil {
		rep.add("transcript", receipts.Undecidable, CauseMissing, "no transcript given (the record commits %s)", tt.Hash)
		return
	}
	alg, want, _ := strings.Cut(tt.Hash, ":")
	var got string
	switch alg {
	case "sha256":
		sum := sha256.Sum256(opts.Transcript)
		got = hex.EncodeToString(sum[:])
	case "sha384":
		sum := sha512.Sum384(opts.Transcript)
		got = hex.EncodeToString(sum[:])
	}
	if got != want {
		rep.add("transcript", receipts.Invalid, CauseTranscriptHash, "the transcript's %d bytes hash to %s:%s, the record commits %s", len(opts.Transcript), alg, got, tt.Hash)
		return
	}
	calls, err := ParseTranscript(opts.Transcript)
	if err != nil {
		rep.add("transcript", receipts.Invalid, receipts.CauseMalformed, "%v", err)
		return
	}
	if tt.CallCount != nil && *tt.CallCount != len(calls) {
		rep.add("transcript", receipts.Invalid, CauseCallCount, "the transcript holds %d calls, the record says %d", len(calls), *tt.CallCount)
		return
	}
	rep.add("transcript", receipts.Valid, "", "%s, %d calls", tt.Hash, len(calls))
	rep.Calls = calls
	if opts.Chain == nil {
		rep.add("receipts", receipts.Undecidable, CauseMissing, "no session chain given: the receipts behind the transcript are not checked")
		return
	}
	results := receipts.VerifyChain(opts.Chain, receipts.Options{Keys: opts.Keys})
	for i, r := range results {
		if r.Outcome != receipts.Valid {
			rep.add("receipts", r.Outcome, r.Cause, "receipt %d: %s", i+1, r.Detail)
			return
		}
		if !bytes.Equal(r.Key, signer) {
			rep.add("receipts", receipts.Invalid, CauseIssuer, "receipt %d is signed by %s, the record by %s: a record vouches for its own issuer's receipts", i+1, r.KID, receipts.KID(signer))
			return
		}
	}
	s, err := ReadSession(opts.Chain)
	if err != nil {
		rep.add("receipts", receipts.Invalid, receipts.CauseMalformed, "%v", err)
		return
	}
	for _, d := range s.PolicyDigests {
		if d != rec.Policy.BundleHash {
			rep.add("receipts", receipts.Invalid, receipts.CausePolicyDigest, "a call was decided under policy %s, the record names %s", d, rec.Policy.BundleHash)
			return
		}
	}
	if err := sameCalls(calls, s.Calls); err != nil {
		rep.add("receipts", receipts.Invalid, CauseTranscript, "%v", err)
		return
	}
	rep.add("receipts", receipts.Valid, "", "%d receipts of session %s back every call, decided under %s", len(opts.Chain), s.ID, rec.Policy.BundleHash)
}

// sameCalls reports the first difference between a transcript and the one
// its receipts make.
func sameCalls(got, want []Call) error {
	for i := range min(len(got), len(want)) {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			return fmt.Errorf("transcript entry %d (%s) is not what the receipts record: %s, receipts: %s", i, got[i].ToolName, g, w)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("the transcript holds %d calls, the session chain %d", len(got), len(want))
	}
	return nil
}

// verifyTransparency checks the log proof of the chain's last receipt,
// which must be signed by signer.
func verifyTransparency(rep *Report, rec *Record, signer ed25519.PublicKey, opts Options) {
	const name = "transparency"
	switch {
	case rec.Transparency == "":
		rep.add(name, receipts.Invalid, CauseNotAnchored, "the record names no log proof (was the session synced before export?)")
		return
	case len(opts.Chain) == 0:
		rep.add(name, receipts.Undecidable, CauseMissing, "no session chain given: its last receipt is the one proven")
		return
	case opts.Proof == nil:
		rep.add(name, receipts.Undecidable, c2sp.CauseNoProof, "no tlog-proof given (the record names %s)", rec.Transparency)
		return
	}
	last := opts.Chain[len(opts.Chain)-1]
	r := receipts.Verify(last, receipts.Options{Keys: opts.Keys})
	if r.Outcome == receipts.Valid && !bytes.Equal(r.Key, signer) {
		rep.add(name, receipts.Invalid, CauseIssuer, "the last receipt is signed by %s, the record by %s: a record vouches for its own issuer's receipts", r.KID, receipts.KID(signer))
		return
	}
	idx := opts.Proofs.CheckReceipt(&r, last, opts.Proof)
	if r.Outcome != receipts.Valid {
		rep.add(name, r.Outcome, r.Cause, "the last receipt's proof: %s", r.Detail)
		return
	}
	rep.add(name, receipts.Valid, "", "the session's last receipt is entry %d of the log (c2sp.org/tlog-proof, not a SCITT receipt)", idx)
}
