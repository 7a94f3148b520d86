package pic

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/internal/strictjson"
)

// verifyEvidence verifies one evidence entry and reports whether it makes
// the provenance of the same id trusted (signature evidence does, hash
// evidence proves integrity only, as in PIC 0.9).
func verifyEvidence(ctx context.Context, ev evidence, p *proposal, o Options, l Limits) (bool, error) {
	switch ev.typ {
	case "hash":
		data, err := readEvidence(ctx, o.EvidenceRoot, ev.ref, l.MaxFileBytes)
		if err != nil {
			return false, err
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != ev.sha256 {
			return false, fmt.Errorf("sha256 mismatch: the file has %s", got)
		}
		return false, nil
	case "sig":
		return true, verifySignature(ev, p, o, l)
	}
	return false, fmt.Errorf("unsupported evidence type %q", ev.typ)
}

// readEvidence reads a file:// reference inside root. The path is resolved
// relative to root (an absolute path must lie inside it) and read through
// an os.Root, so neither ".." nor a symlink can leave the root; only a
// regular file of at most max bytes is read, its open cannot block (a
// FIFO), and the read ends when ctx (the verification's budget) does.
func readEvidence(ctx context.Context, root, ref string, max int64) ([]byte, error) {
	if root == "" {
		return nil, errors.New("no evidence root is configured: file evidence cannot be verified")
	}
	if !strings.HasPrefix(ref, "file://") {
		return nil, fmt.Errorf("unsupported reference %q (want file://)", ref)
	}
	u, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("reference: %v", err)
	}
	path := u.Path
	if u.Host != "" {
		path = u.Host + "/" + strings.TrimPrefix(path, "/")
	}
	if path == "" {
		return nil, errors.New("empty file reference")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	rel := path
	if filepath.IsAbs(path) {
		rel, err = filepath.Rel(absRoot, filepath.Clean(path))
		if err != nil {
			return nil, err
		}
		if real, err := filepath.EvalSymlinks(absRoot); err == nil && (rel == ".." || strings.HasPrefix(rel, "../")) {
			// The root may be reached through a symlink: try its real path.
			if r2, err := filepath.Rel(real, filepath.Clean(path)); err == nil {
				rel = r2
			}
		}
	}
	rel = filepath.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("%s escapes the evidence root", ref)
	}
	r, err := os.OpenRoot(absRoot)
	if err != nil {
		return nil, fmt.Errorf("evidence root: %w", err)
	}
	defer r.Close()
	data, err := safefile.ReadIn(ctx, r, rel, max)
	if err != nil {
		return nil, fmt.Errorf("evidence file: %w", err)
	}
	return data, nil
}

// attestationVersions are the canonical attestation versions accepted.
var attestationVersions = map[string]bool{"PIC-ATT/1.0": true}

// rfc3339Aware is an RFC 3339 timestamp with a zone designator, unpadded.
var rfc3339Aware = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
})

// verifySignature verifies signature evidence. A payload that is a JSON
// object with "attestation_version" is a canonical attestation: the
// signature is over its JCS form and it must bind to the proposal (tool,
// impact, provenance ids, args, claims and intent digests, expiry).
// Any other payload is legacy: the signature is over its UTF-8 bytes.
func verifySignature(ev evidence, p *proposal, o Options, l Limits) error {
	if len(ev.payload) > l.MaxPayloadBytes {
		return fmt.Errorf("payload is %d bytes, limit %d", len(ev.payload), l.MaxPayloadBytes)
	}
	msg := []byte(ev.payload)
	var att map[string]any
	v, err := strictjson.Parse(msg)
	if err == nil {
		// A JSON payload with members that differ only in case is
		// refused, as anywhere in a proposal, and so is an attestation
		// version named in another case: it would make an attestation
		// a legacy payload, bound to nothing.
		if err = strictjson.CheckFold(v); err != nil {
			return fmt.Errorf("payload: %v", err)
		}
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				if strings.EqualFold(k, "attestation_version") && k != "attestation_version" {
					return fmt.Errorf("payload member %q is not attestation_version", k)
				}
			}
			if _, ok := m["attestation_version"]; ok {
				att = m
			}
		}
	} else if looksLikeAttestation(msg) {
		// A canonical-looking payload the strict parser refuses
		// (duplicate keys at any depth, bad UTF-8): never downgrade it
		// to the legacy mode.
		return fmt.Errorf("attestation payload: %v", err)
	}
	if att != nil {
		av, ok := att["attestation_version"].(string)
		if !ok || !attestationVersions[av] {
			return fmt.Errorf("unsupported attestation_version %v", att["attestation_version"])
		}
		c, err := strictjson.Canonicalize(att)
		if err != nil {
			return fmt.Errorf("attestation: %v", err)
		}
		if len(c) > l.MaxPayloadBytes {
			return fmt.Errorf("canonical attestation is %d bytes, limit %d", len(c), l.MaxPayloadBytes)
		}
		msg = c
	}
	if o.Keys == nil {
		return errors.New("no keyring is configured: signature evidence cannot be verified")
	}
	pub, err := o.Keys.key(ev.keyID, o.Now())
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(ev.signature)
	if err != nil {
		if sig, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(ev.signature, "=")); err != nil {
			return errors.New("signature is not base64")
		}
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, msg, sig) {
		return fmt.Errorf("signature does not verify with key %q", ev.keyID)
	}
	if att == nil {
		return nil
	}
	return bindAttestation(att, p, o.Now())
}

// looksLikeAttestation reports whether a payload the strict parser refused
// still names an attestation_version.
func looksLikeAttestation(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return strings.HasPrefix(s, "{") && strings.Contains(strings.ToLower(s), `attestation_version`)
}

// bindAttestation checks a verified attestation against the proposal.
func bindAttestation(att map[string]any, p *proposal, now time.Time) error {
	tool, ok1 := att["tool"].(string)
	impact, ok2 := att["impact"].(string)
	if !ok1 || !ok2 {
		return errors.New("attestation tool and impact must be strings")
	}
	if tool != p.tool {
		return fmt.Errorf("attestation is for tool %q, the proposal for %q", tool, p.tool)
	}
	if impact != p.impact {
		return fmt.Errorf("attestation impact %q is not the proposal's %q", impact, p.impact)
	}
	ids, ok := att["provenance_ids"].([]any)
	if !ok || len(ids) != len(p.provenance) {
		return errors.New("attestation provenance_ids do not match the proposal's provenance")
	}
	for i, id := range ids {
		if s, ok := id.(string); !ok || s != p.provenance[i] {
			return errors.New("attestation provenance_ids do not match the proposal's provenance")
		}
	}
	if err := bindDigest(att, "args_digest", p.args); err != nil {
		return err
	}
	if err := bindDigest(att, "claims_digest", p.claimsValue); err != nil {
		return err
	}
	if _, ok := att["intent_digest"]; ok {
		if err := bindDigest(att, "intent_digest", nil, []byte(p.intent)); err != nil {
			return err
		}
	}
	if v, ok := att["expires_at"]; ok {
		s, _ := v.(string)
		if !rfc3339Aware().MatchString(s) {
			return fmt.Errorf("attestation expires_at %q is not an RFC 3339 time with a zone", v)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("attestation expires_at %q: %v", s, err)
		}
		if t.Before(now) {
			return fmt.Errorf("attestation expired at %s", s)
		}
	}
	return nil
}

// bindDigest checks that att[field] is the lowercase hex SHA-256 of the JCS
// form of v, or of raw when given.
func bindDigest(att map[string]any, field string, v any, raw ...[]byte) error {
	want, ok := att[field].(string)
	if !ok || len(want) != 64 || !isLowerHex(want) {
		return fmt.Errorf("attestation %s is not 64 lowercase hex digits", field)
	}
	var b []byte
	if len(raw) > 0 {
		b = raw[0]
	} else {
		var err error
		if b, err = strictjson.Canonicalize(v); err != nil {
			return fmt.Errorf("%s: %v", field, err)
		}
	}
	sum := sha256.Sum256(b)
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(want)) != 1 {
		return fmt.Errorf("attestation %s does not match the proposal", field)
	}
	return nil
}
