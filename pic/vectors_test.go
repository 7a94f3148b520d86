package pic_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/receipts"
)

// vectorDir holds the PIC v0.8.2 conformance vectors (provenance in
// testdata/vectors/README.md §8).
const vectorDir = "../testdata/vectors/pic"

// pic09 lists the vectors whose expected outcome PIC 0.9 changed, with the
// outcome Docket (following 0.9) gives instead and why.
var pic09 = map[string]struct{ expected, code, why string }{
	// Hash evidence proves a file's integrity but no longer makes
	// provenance trusted: a money action backed only by hashes is blocked.
	"evidence-hash-allow-001-simple":          {"block", pic.CodeVerifierFailed, "0.9: hash evidence no longer upgrades trust"},
	"evidence-hash-allow-002-multiple-hashes": {"block", pic.CodeVerifierFailed, "0.9: hash evidence no longer upgrades trust"},
	"trust-financial_hash_ok-strict-f-verify-t": {"block", pic.CodeVerifierFailed,
		"0.9: hash evidence no longer upgrades trust"},
	"trust-financial_hash_ok-strict-t-verify-t": {"block", pic.CodeVerifierFailed,
		"0.9: hash evidence no longer upgrades trust"},
	// strict_trust is always on: self-asserted "trusted" is sanitized.
	"core-allow-002-trusted-money": {"block", pic.CodeVerifierFailed, "0.9: strict trust, self-asserted trust is ignored"},
	"trust-financial_irreversible-strict-f-verify-f": {"block", pic.CodeVerifierFailed,
		"0.9: strict trust, self-asserted trust is ignored"},
	"trust-financial_irreversible-strict-f-verify-t": {"block", pic.CodeVerifierFailed,
		"0.9: strict trust, self-asserted trust is ignored"},
	"trust-privacy_risk-strict-f-verify-f": {"block", pic.CodeVerifierFailed, "0.9: strict trust, self-asserted trust is ignored"},
	"trust-privacy_risk-strict-f-verify-t": {"block", pic.CodeVerifierFailed, "0.9: strict trust, self-asserted trust is ignored"},
	"trust-robotic_action-strict-f-verify-f": {"block", pic.CodeVerifierFailed,
		"0.9: strict trust, self-asserted trust is ignored"},
	"trust-robotic_action-strict-f-verify-t": {"block", pic.CodeVerifierFailed,
		"0.9: strict trust, self-asserted trust is ignored"},
	// The tool-binding vector's proposal is the self-asserted trusted
	// money proposal above: under strict trust the causal contract
	// fails first. TestToolBinding checks binding on its own.
	"core-block-002-tool-binding-mismatch": {"block", pic.CodeVerifierFailed, "0.9: strict trust fails the proposal before tool binding"},
}

type manifest struct {
	Vectors []struct {
		ID, File, Mode, Expected string
		Code                     string `json:"expected_error_code"`
	}
}

type vector struct {
	Proposal json.RawMessage
	Options  struct {
		ExpectedTool    string `json:"expected_tool"`
		EvidenceRootDir string `json:"evidence_root_dir"`
	}
	EmbeddedKeyring json.RawMessage `json:"embedded_keyring"`
	// canonicalization vectors
	Input        json.RawMessage
	ExpectedHex  string `json:"expected_canonical_bytes_hex"`
	ExpectedHash string `json:"expected_sha256_hex"`
}

func TestConformanceVectors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(vectorDir, "conformance/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Vectors) < 60 {
		t.Fatalf("manifest lists %d vectors, want at least 60", len(m.Vectors))
	}
	for _, mv := range m.Vectors {
		t.Run(mv.ID, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(vectorDir, "conformance", mv.File))
			if err != nil {
				t.Fatal(err)
			}
			var v vector
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if mv.Mode == "canonicalization" {
				in, err := receipts.Parse(v.Input)
				if err != nil {
					t.Fatal(err)
				}
				got, err := receipts.Canonicalize(in)
				if err != nil || hex.EncodeToString(got) != v.ExpectedHex {
					t.Fatalf("Canonicalize = %q, %v; want %x", got, err, v.ExpectedHex)
				}
				return
			}
			o := pic.Options{Tool: v.Options.ExpectedTool}
			if v.Options.EvidenceRootDir != "" {
				o.EvidenceRoot = filepath.Join(vectorDir, v.Options.EvidenceRootDir)
			}
			if len(v.EmbeddedKeyring) > 0 {
				if o.Keys, err = pic.ParseKeyring(v.EmbeddedKeyring); err != nil {
					t.Fatal(err)
				}
			}
			want, code := mv.Expected, mv.Code
			if c, ok := pic09[mv.ID]; ok {
				t.Logf("expected outcome changed from %s to %s: %s", want, c.expected, c.why)
				want, code = c.expected, c.code
			}
			res, err := pic.Verify(t.Context(), v.Proposal, o)
			switch want {
			case "allow":
				if err != nil {
					t.Fatalf("Verify = %v, want allow", err)
				}
				if res.Digest == "" {
					t.Fatalf("Verify gave no digest")
				}
			case "block":
				var pe *pic.Error
				if !errors.As(err, &pe) || pe.Code != code {
					t.Fatalf("Verify = %+v, %v; want block with %s", res, err, code)
				}
			default:
				t.Fatalf("unknown expected outcome %q", want)
			}
		})
	}
}
