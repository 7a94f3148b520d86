package trace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The shape of a trace-v0.2 record, after the project's JSON schema
// (schema/trace-v0.2.json): each object's members, which are required, and
// what each holds. Signature validity is not schema validity; a verified
// record must be both (trace-v0.2 §3.2.2).

// A member is one member of a schema object.
type member struct {
	required bool
	kind     string   // "string", "digest", "int", "object"
	enum     []string // for strings
	min, max int64    // for ints (max 0: none)
	object   []field  // for objects; nil means open (any members)
	open     bool     // an object that allows members beyond its fields
	prefix   []string // for strings: one of these must start it
}

type field struct {
	name string
	member
}

// isDigest reports whether s is "sha256:" + 64 or "sha384:" + 96
// lowercase hex digits. (A function, not a regular expression compiled
// when the package loads: every docket process, every hook, would pay
// for it.)
func isDigest(s string) bool {
	var hexLen int
	switch {
	case strings.HasPrefix(s, "sha256:"):
		hexLen = 64
	case strings.HasPrefix(s, "sha384:"):
		hexLen = 96
	default:
		return false
	}
	h := s[len("sha256:"):]
	if len(h) != hexLen {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

var depths = []string{"surface", "builder", "transitive"}

var recordSchema = []field{
	{"eat_profile", member{required: true, kind: "string"}},
	{"iat", member{required: true, kind: "int", min: 1700000000}},
	{"subject", member{required: true, kind: "string", prefix: []string{"spiffe://", "did:"}}},
	{"model", member{required: true, kind: "object", object: []field{
		{"provider", member{required: true, kind: "string"}},
		{"model_id", member{required: true, kind: "string"}},
		{"version", member{kind: "string"}},
		{"weights_digest", member{kind: "digest"}},
		{"aibom_uri", member{kind: "string"}},
	}}},
	{"runtime", member{required: true, kind: "object", object: []field{
		{"platform", member{required: true, kind: "string", enum: []string{"intel-tdx", "amd-sev-snp", "azure-cvm-sev-snp",
			"nvidia-h100", "nvidia-blackwell", "aws-nitro", "arm-cca", "google-confidential-space", "tpm2", "software-only"}}},
		{"measurement", member{required: true, kind: "digest"}},
		{"rim_uri", member{kind: "string"}},
		{"nonce", member{kind: "string"}},
		{"firmware_version", member{kind: "string"}},
	}}},
	{"policy", member{required: true, kind: "object", object: []field{
		{"bundle_hash", member{required: true, kind: "digest"}},
		{"enforcement_mode", member{required: true, kind: "string", enum: []string{"enforce", "advisory", "silent", "declared"}}},
		{"version", member{kind: "string"}},
		{"policy_uri", member{kind: "string"}},
	}}},
	{"data_class", member{required: true, kind: "string"}},
	{"tool_transcript", member{kind: "object", object: []field{
		{"hash", member{required: true, kind: "digest"}},
		{"call_count", member{kind: "int"}},
		{"transcript_uri", member{kind: "string"}},
	}}},
	{"delegation", member{kind: "object", object: []field{
		{"parent_record_hash", member{required: true, kind: "digest"}},
		{"credential_id", member{required: true, kind: "string"}},
	}}},
	{"origin", member{kind: "object", object: []field{
		{"kind", member{required: true, kind: "string", enum: []string{"self", "third-party-control-plane", "log-import"}}},
		{"producer", member{required: true, kind: "string"}},
		{"source_event_id", member{kind: "string"}},
		{"ingested_at", member{kind: "int", min: 1700000000}},
	}}},
	{"build_provenance", member{required: true, kind: "object", object: []field{
		{"slsa_level", member{required: true, kind: "int", max: 3}},
		{"builder", member{kind: "string"}},
		{"digest", member{required: true, kind: "digest"}},
		{"provenance_uri", member{kind: "string"}},
		{"provenance_depth", member{kind: "string", enum: depths}},
	}}},
	{"appraisal", member{required: true, kind: "object", object: []field{
		{"status", member{required: true, kind: "string", enum: []string{"affirming", "warning", "contraindicated", "none"}}},
		{"verifier", member{required: true, kind: "string"}},
		{"policy_ref", member{kind: "string"}},
		{"timestamp", member{kind: "int"}},
		{"provenance_depth_verified", member{kind: "string", enum: depths}},
	}}},
	{"transparency", member{kind: "string"}},
	{"cnf", member{required: true, kind: "object", object: []field{
		{"jwk", member{required: true, kind: "object", open: true, object: []field{
			{"kty", member{required: true, kind: "string"}},
			{"crv", member{kind: "string"}},
			{"x", member{kind: "string"}},
			{"y", member{kind: "string"}},
			{"kid", member{kind: "string"}},
		}}},
	}}},
	{"signature", member{kind: "string"}},
}

// checkSchema checks a parsed record against the trace-v0.2 schema.
func checkSchema(obj map[string]any) error {
	if err := checkObject("", obj, recordSchema, false); err != nil {
		return err
	}
	if o, ok := obj["origin"].(map[string]any); ok && o["kind"] != "self" {
		if obj["runtime"].(map[string]any)["platform"] != "software-only" {
			return fmt.Errorf("origin.kind %v requires runtime.platform software-only (§3.1.1)", o["kind"])
		}
	}
	jwk := obj["cnf"].(map[string]any)["jwk"].(map[string]any)
	for _, need := range map[any][]string{"OKP": {"crv", "x"}, "EC": {"crv", "x", "y"}}[jwk["kty"]] {
		if _, ok := jwk[need]; !ok {
			return fmt.Errorf("cnf.jwk of kty %v has no %s", jwk["kty"], need)
		}
	}
	return nil
}

func checkObject(path string, obj map[string]any, fields []field, open bool) error {
	for _, f := range fields {
		v, ok := obj[f.name]
		if !ok {
			if f.required {
				return fmt.Errorf("%s%s is required", path, f.name)
			}
			continue
		}
		if err := checkMember(path+f.name, v, f.member); err != nil {
			return err
		}
	}
	if open {
		return nil
	}
	for k := range obj {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
			return fmt.Errorf("%s%s is not a member of a trace-v0.2 record", path, k)
		}
	}
	return nil
}

func checkMember(path string, v any, m member) error {
	switch m.kind {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s must be an object", path)
		}
		return checkObject(path+".", o, m.object, m.open)
	case "int":
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || strings.ContainsAny(string(n), ".eE") {
			return fmt.Errorf("%s must be an integer", path)
		}
		if i < m.min || m.max > 0 && i > m.max {
			return fmt.Errorf("%s = %d is out of range", path, i)
		}
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s must be a string", path)
	}
	switch {
	case m.kind == "digest" && !isDigest(s):
		return fmt.Errorf("%s %q is not a sha256: or sha384: digest", path, s)
	case m.enum != nil && !slices.Contains(m.enum, s):
		return fmt.Errorf("%s %q is not one of %v", path, s, m.enum)
	case m.prefix != nil && !slices.ContainsFunc(m.prefix, func(p string) bool { return strings.HasPrefix(s, p) }):
		return fmt.Errorf("%s %q does not start with one of %v", path, s, m.prefix)
	}
	return nil
}
