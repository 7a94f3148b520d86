package trace

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// Profile is the EAT profile of the TRACE release this package implements
// (trace-v0.2 §3.2); it is the only one Verify accepts.
const Profile = "tag:agentrust-io.com,2026:trace-v0.2"

// profileV01 is the superseded v0.1 identifier, named only so that its
// rejection can say why (trace-v0.2, "Changes from v0.1").
const profileV01 = "tag:agentrust.io,2026:trace-v0.1"

// Verifier is the appraisal verifier URI of records whose appraisal comes
// from docket audit.
const Verifier = "https://github.com/docketlog/docket#docket-audit"

// A Record is a TRACE Trust Record (trace-v0.2 §3.1) as Docket writes it.
// Members Docket never fills (delegation, origin, optional claims of the
// hardware profiles) are left out of the type; Verify checks the schema on
// the record as received, not through this type.
type Record struct {
	EATProfile      string          `json:"eat_profile"`
	IAT             int64           `json:"iat"`
	Subject         string          `json:"subject"`
	Model           Model           `json:"model"`
	Runtime         Runtime         `json:"runtime"`
	Policy          Policy          `json:"policy"`
	DataClass       string          `json:"data_class"`
	ToolTranscript  *ToolTranscript `json:"tool_transcript,omitempty"`
	BuildProvenance BuildProvenance `json:"build_provenance"`
	Appraisal       Appraisal       `json:"appraisal"`
	Transparency    string          `json:"transparency,omitempty"`
	CNF             CNF             `json:"cnf"`
	Signature       string          `json:"signature,omitempty"`
}

// Model is the record's model claim.
type Model struct {
	Provider string `json:"provider"`
	ModelID  string `json:"model_id"`
	Version  string `json:"version,omitempty"`
}

// Runtime is the record's runtime claim.
type Runtime struct {
	Platform    string `json:"platform"`
	Measurement string `json:"measurement"`
}

// Policy is the record's policy claim.
type Policy struct {
	BundleHash      string `json:"bundle_hash"`
	EnforcementMode string `json:"enforcement_mode"`
}

// ToolTranscript commits the transcript by hash.
type ToolTranscript struct {
	Hash          string `json:"hash"`
	CallCount     *int   `json:"call_count,omitempty"`
	TranscriptURI string `json:"transcript_uri,omitempty"`
}

// BuildProvenance is the record's build_provenance claim.
type BuildProvenance struct {
	SLSALevel int    `json:"slsa_level"`
	Digest    string `json:"digest"`
}

// Appraisal is an EAR appraisal (status affirming, warning,
// contraindicated or none).
type Appraisal struct {
	Status    string `json:"status"`
	Verifier  string `json:"verifier"`
	PolicyRef string `json:"policy_ref,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

// CNF holds the confirmation key: the key that signs the record.
type CNF struct {
	JWK JWK `json:"jwk"`
}

// JWK is an OKP Ed25519 public key.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
}

// Config is what New makes a record from.
type Config struct {
	// Key is the issuer key: it signs the record and is its cnf.jwk.
	Key ed25519.PrivateKey
	// Session is the session chain, read by ReadSession.
	Session *Session
	// Transcript is the transcript's bytes (MarshalTranscript), and
	// TranscriptURI where it will be published.
	Transcript    []byte
	TranscriptURI string
	// Subject is the workload identity (a spiffe:// or did: URI); empty
	// means the issuer key as a did:key.
	Subject string
	// PolicyDigest is the policy in force, used when the session holds no
	// decision to read it from.
	PolicyDigest string
	// Measurement is "sha256:" + hex of the docket binary that exports.
	Measurement string
	// DataClass is the data classification; empty means DefaultDataClass.
	DataClass string
	// Appraisal is the result of docket audit; nil means no audit ran.
	Appraisal *Appraisal
	// Transparency is the URI of the tlog-proof of the session's last
	// receipt; empty when it is not logged yet.
	Transparency string
	// Now is the issue time; zero means time.Now.
	Now time.Time
}

// DefaultDataClass is the data_class of records whose exporter did not
// classify the data: Docket sees hashes of tool inputs, not their content.
const DefaultDataClass = "unclassified"

// agentProviders maps the agent names of receipts to model providers.
var agentProviders = map[string]string{"claude-code": "anthropic", "codex": "openai", "gemini-cli": "google"}

// New builds the unsigned Trust Record of a session.
func New(cfg Config) (*Record, error) {
	if cfg.Key == nil || cfg.Session == nil {
		return nil, errors.New("trace: a key and a session are required")
	}
	pub := cfg.Key.Public().(ed25519.PublicKey)
	s := cfg.Session
	r := &Record{
		EATProfile: Profile,
		Subject:    cfg.Subject,
		Model:      Model{Provider: "unknown", ModelID: "unknown"},
		Runtime:    Runtime{Platform: "software-only", Measurement: cfg.Measurement},
		Policy:     Policy{BundleHash: cfg.PolicyDigest, EnforcementMode: "enforce"},
		DataClass:  cfg.DataClass,
		// No SLSA provenance is claimed: level 0 and the binary's own hash.
		BuildProvenance: BuildProvenance{SLSALevel: 0, Digest: cfg.Measurement},
		Appraisal:       Appraisal{Status: "none", Verifier: Verifier},
		Transparency:    cfg.Transparency,
		CNF:             CNF{JWK: JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub)}},
	}
	now := cfg.Now
	if now.IsZero() {
		now = time.Now()
	}
	r.IAT = now.Unix()
	if r.Subject == "" {
		r.Subject = receipts.DIDKey(pub)
	}
	if r.DataClass == "" {
		r.DataClass = DefaultDataClass
	}
	if s.Model != "" {
		r.Model = Model{Provider: "unknown", ModelID: s.Model}
		if p, ok := agentProviders[s.Agent]; ok {
			r.Model.Provider = p
		}
	}
	switch len(s.PolicyDigests) {
	case 0:
	case 1:
		r.Policy.BundleHash = s.PolicyDigests[0]
	default:
		return nil, fmt.Errorf("trace: session %s was decided under %d policies (%v); a record names one", s.ID, len(s.PolicyDigests), s.PolicyDigests)
	}
	if r.Policy.BundleHash == "" {
		return nil, errors.New("trace: no policy digest")
	}
	if cfg.Appraisal != nil {
		r.Appraisal = *cfg.Appraisal
	}
	n := len(s.Calls)
	r.ToolTranscript = &ToolTranscript{Hash: Digest(cfg.Transcript), CallCount: &n, TranscriptURI: cfg.TranscriptURI}
	return r, nil
}

// Digest returns "sha256:" + lowercase hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Sign signs r as trace-v0.2 §3.2.2 requires: Ed25519 by key over the
// RFC 8785 (JCS) bytes of the record without its signature member, with
// key's public half as cnf.jwk. It returns the signed record as indented
// JSON (verifiers canonicalize what they parse, so the layout is free).
func Sign(r *Record, key ed25519.PrivateKey) ([]byte, error) {
	pub := key.Public().(ed25519.PublicKey)
	r.CNF.JWK = JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub)}
	r.Signature = ""
	j, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	msg, err := strictjson.CanonicalizeJSON(j)
	if err != nil {
		return nil, err
	}
	r.Signature = base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, msg))
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
