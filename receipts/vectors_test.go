package receipts

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vectors is the copy of ../shared/vectors kept in the repository; its
// README gives each file's provenance.
const vectors = "../testdata/vectors"

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectors, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeVector(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(readVector(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func seedKey(last byte) ed25519.PrivateKey {
	seed := make([]byte, 32)
	seed[31] = last
	return ed25519.NewKeyFromSeed(seed)
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

var (
	conformanceKey = seedKey(0x01) // agtv fixtures/keys
	adversaryKey   = seedKey(0xff)
	bystanderKey   = seedKey(0x02)
)

func mustHexKey(t *testing.T, s string) *KeySet {
	t.Helper()
	k, err := ParsePublicKeyHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return PinnedKey(k)
}

func wantResult(t *testing.T, name string, got Result, want Outcome, cause string) {
	t.Helper()
	if got.Outcome != want || (cause != "" && got.Cause != cause) {
		t.Errorf("%s: Verify = %v %s (%s), want %v %s", name, got.Outcome, got.Cause, got.Detail, want, cause)
	}
}

func TestJCSVectors(t *testing.T) {
	var doc struct {
		Vectors []struct {
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			Canonical *string         `json:"canonical"`
			SHA256    string          `json:"sha256"`
		} `json:"vectors"`
	}
	decodeVector(t, "veritasacta-verify/jcs-test-vectors.json", &doc)
	if len(doc.Vectors) != 9 {
		t.Fatalf("got %d JCS vectors, want 9", len(doc.Vectors))
	}
	for _, v := range doc.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, err := CanonicalizeJSON(v.Input)
			if err != nil {
				t.Fatal(err)
			}
			if v.Canonical == nil { // the receipts profile refuses non-ASCII keys
				if _, _, _, ascii, err := parseSpansKeys(v.Input); err != nil || ascii {
					t.Errorf("parseSpansKeys(%s) ascii = %v, %v; want false", v.Input, ascii, err)
				}
				r := Verify([]byte(`{"payload":`+string(got)+`,"signature":{"alg":"EdDSA","kid":"k","sig":"00"}}`), Options{})
				wantResult(t, v.Name, r, Undecidable, CauseMalformed)
				return
			}
			if string(got) != *v.Canonical {
				t.Errorf("CanonicalizeJSON = %s, want %s", got, *v.Canonical)
			}
			sum := sha256.Sum256(got)
			if hex.EncodeToString(sum[:]) != v.SHA256 {
				t.Errorf("sha256 = %x, want %s", sum, v.SHA256)
			}
		})
	}
}

// TestJCSRFC8785 checks the number and string rules of RFC 8785 that the
// third-party vectors do not reach, with the RFC's own examples.
func TestJCSRFC8785(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"rfc appendix B numbers", `[0, -0, 1e-7, 1e21, 1e20, 333333333.33333329, 1E30, 4.50, 2e-3, 0.000001, 9007199254740993]`,
			`[0,0,1e-7,1e+21,100000000000000000000,333333333.3333333,1e+30,4.5,0.002,0.000001,9007199254740992]`},
		{"rfc 3.2.3 sorting", `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"strings", `["\u0000\u001f\b\t\n\f\r\"\\/","<>&\u2028"]`, `["\u0000\u001f\b\t\n\f\r\"\\/","<>&` + "\u2028" + `"]`},
		{"whitespace and nesting", " { \"b\" : [ true , false , null ] , \"a\" : { } } ", `{"a":{},"b":[true,false,null]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalizeJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("CanonicalizeJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	tests := []struct{ name, in, want string }{
		{"duplicate key", `{"a":1,"a":2}`, "duplicate key"},
		{"nested duplicate key", `{"x":{"a":1,"b":2,"a":3}}`, "duplicate key"},
		{"invalid utf-8", "{\"a\":\"\xff\"}", "invalid UTF-8"},
		{"lone high surrogate", `"\ud800"`, "lone surrogate"},
		{"lone low surrogate", `"\udc00x"`, "lone surrogate"},
		{"high surrogate then letter", `"\ud800\u0041"`, "lone surrogate"},
		{"trailing data", `{} {}`, "trailing data"},
		{"too deep", deep, "nesting deeper"},
		{"leading zero", `01`, "leading zero"},
		{"control character", "\"a\x01\"", "control character"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"empty", ``, "unexpected end"},
		{"unterminated", `{"a":"b`, "unterminated"},
		{"huge number", `1e400`, "out of range"},
		{"too large", `"` + strings.Repeat("a", MaxDocumentSize) + `"`, "too large"},
		{"nan", `NaN`, "unexpected character"},
		{"single quotes", `{'a':1}`, "expected object key"},
		{"trailing comma", `[1,]`, "unexpected character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%.40q) = %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestKIDAndThumbprint(t *testing.T) {
	if got, want := hex.EncodeToString(pub(conformanceKey)), "4cb5abf6ad79fbf5abbccafcc269d85cd2651ed4b885b5869f241aedf0a5ba29"; got != want {
		t.Fatalf("conformance public key = %s, want %s", got, want)
	}
	if got, want := KID(pub(conformanceKey)), "sb:issuer:6ASf5EcmmEHT"; got != want {
		t.Errorf("KID = %s, want %s", got, want)
	}
	if got, want := Thumbprint(pub(conformanceKey)), "3iR-H6Xx_3rpt7eNMUVNazSZkUclb_cekBJZZL4mlUs"; got != want {
		t.Errorf("Thumbprint = %s, want %s", got, want)
	}
	trace := mustHexKey(t, string(readVector(t, "trace-acta/signer-public-key.txt")))
	if got, want := KID(trace.Keys[0].Public), "sb:issuer:QUGuJV1P6e6c"; got != want {
		t.Errorf("KID(trace key) = %s, want %s", got, want)
	}
	if got := base58([]byte{0, 0, 1}); got != "112" {
		t.Errorf("base58(00 00 01) = %s, want 112", got)
	}
}

func TestDerivedDraft04Chain(t *testing.T) {
	var doc struct {
		PublicKey      string          `json:"public_key_hex"`
		KID            string          `json:"kid"`
		PolicyManifest json.RawMessage `json:"policy_manifest"`
		PolicyDigest   string          `json:"policy_digest"`
		Receipts       []struct {
			Name         string          `json:"name"`
			Envelope     json.RawMessage `json:"envelope"`
			SigningInput string          `json:"signing_input_utf8"`
			ChainHash    string          `json:"envelope_chain_hash"`
		} `json:"receipts"`
	}
	decodeVector(t, "derived/draft04-envelope-chain.json", &doc)
	policy := readVector(t, "agtv/fixtures/policy/autoresearch-safe.cedar")
	digest, err := PolicyDigest([]PolicyFile{{Name: "autoresearch-safe.cedar", Data: policy}})
	if err != nil || digest != doc.PolicyDigest {
		t.Errorf("PolicyDigest = %s, %v, want %s", digest, err, doc.PolicyDigest)
	}
	var chain [][]byte
	for _, r := range doc.Receipts {
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		json.Unmarshal(r.Envelope, &env)
		payload, err := CanonicalizeJSON(env.Payload)
		if err != nil || string(payload) != r.SigningInput {
			t.Errorf("%s: signing input = %s, %v, want %s", r.Name, payload, err, r.SigningInput)
		}
		// Deterministic Ed25519: re-signing reproduces the envelope exactly.
		signed := SignCanonical(conformanceKey, payload)
		want, _ := CanonicalizeJSON(r.Envelope)
		if string(signed) != string(want) {
			t.Errorf("%s: SignCanonical = %s, want %s", r.Name, signed, want)
		}
		if got := ChainHash(signed); got != r.ChainHash {
			t.Errorf("%s: ChainHash = %s, want %s", r.Name, got, r.ChainHash)
		}
		chain = append(chain, r.Envelope)
	}
	results := VerifyChain(chain, Options{Keys: mustHexKey(t, doc.PublicKey), PolicyDigest: doc.PolicyDigest})
	for i, r := range results {
		wantResult(t, doc.Receipts[i].Name, r, Valid, "")
		if r.Legacy != "" || r.KID != doc.KID {
			t.Errorf("%s: legacy %q kid %q, want none and %s", doc.Receipts[i].Name, r.Legacy, r.KID, doc.KID)
		}
	}
	// The same chain under the wrong key, or with a receipt missing, fails.
	if r := VerifyChain(chain, Options{Keys: PinnedKey(pub(bystanderKey))}); r[0].Outcome != Invalid {
		t.Errorf("VerifyChain(bystander key)[0] = %v, want invalid", r[0].Outcome)
	}
	if r := VerifyChain([][]byte{chain[0], chain[2]}, Options{Keys: mustHexKey(t, doc.PublicKey)}); r[1].Cause != CauseChainBreak {
		t.Errorf("VerifyChain(receipt dropped)[1] = %v %s, want chain_break", r[1].Outcome, r[1].Cause)
	}
}

func TestDerivedFlat(t *testing.T) {
	var doc struct {
		PublicKey    string          `json:"public_key_hex"`
		Receipt      json.RawMessage `json:"receipt"`
		SigningInput string          `json:"signing_input_utf8"`
	}
	decodeVector(t, "derived/draft04-flat-single.json", &doc)
	r := Verify(doc.Receipt, Options{Keys: mustHexKey(t, doc.PublicKey)})
	wantResult(t, "flat", r, Valid, "")
	if r.Shape != "flat" {
		t.Errorf("shape = %s, want flat", r.Shape)
	}
	rc, _, _ := parseReceipt(doc.Receipt)
	if string(rc.signingInput) != doc.SigningInput {
		t.Errorf("signing input = %s, want %s", rc.signingInput, doc.SigningInput)
	}
}

func TestAPSV2Receipts(t *testing.T) {
	keys := PinnedKey(pub(conformanceKey))
	for _, dir := range []string{"2-external-verification", "3-state-drift", "4-portability"} {
		t.Run(dir, func(t *testing.T) {
			data := readVector(t, "agtv/aps-gateway-enforcement/"+dir+"/receipt.json")
			r := Verify(data, Options{Keys: keys})
			wantResult(t, dir, r, Valid, "")
			if r.Shape != "v2-artifact" {
				t.Errorf("shape = %s, want v2-artifact", r.Shape)
			}
			// With the wrong key it is invalid.
			wantResult(t, dir+" bystander", Verify(data, Options{Keys: PinnedKey(pub(bystanderKey))}), Invalid, CauseBadSignature)
		})
	}
	data := readVector(t, "agtv/aps-gateway-enforcement/2-external-verification/receipt.json")
	rc, _, _ := parseReceipt(data)
	canonical := strings.TrimRight(string(readVector(t, "agtv/aps-gateway-enforcement/2-external-verification/canonical.txt")), "\n")
	if string(rc.signingInput) != canonical {
		t.Errorf("signing input = %s, want canonical.txt %s", rc.signingInput, canonical)
	}
	jwks, err := ParseJWKS(readVector(t, "agtv/aps-gateway-enforcement/2-external-verification/jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantResult(t, "jwks", Verify(data, Options{Keys: jwks}), Valid, "")
	var in struct {
		Params json.RawMessage `json:"params"`
	}
	decodeVector(t, "agtv/aps-gateway-enforcement/2-external-verification/input.json", &in)
	v, _ := Parse(in.Params)
	if h, _ := HashJSON(v); h != rc.payload["params_hash"] {
		t.Errorf("HashJSON(params) = %s, want %s", h, rc.payload["params_hash"])
	}
}

func TestNobulexFlatChain(t *testing.T) {
	var chain [][]byte
	for i := 1; i <= 4; i++ {
		chain = append(chain, readVector(t, "agtv-nobulex-v1flat/receipt-000"+string(rune('0'+i))+".json"))
	}
	results := VerifyChain(chain, Options{Keys: PinnedKey(pub(conformanceKey))})
	for i, r := range results {
		wantResult(t, "nobulex", r, Valid, "")
		if i > 0 && !strings.Contains(r.Legacy, "payload-only") {
			t.Errorf("receipt %d: legacy = %q, want payload-only", i+1, r.Legacy)
		}
	}
	if !strings.Contains(results[0].Legacy, "null genesis") {
		t.Errorf("receipt 1: legacy = %q, want null genesis", results[0].Legacy)
	}
	// Only the embedded public_key: undecidable.
	wantResult(t, "no key", Verify(chain[0], Options{}), Undecidable, CauseEmbeddedKeyOnly)
	obj, _ := ParseObject(chain[1])
	if h, _ := HashJSON(obj["tool_input"]); h != obj["input_hash"] {
		t.Errorf("HashJSON(tool_input) = %s, want %s", h, obj["input_hash"])
	}
}

func TestEmbeddedKeyNegative(t *testing.T) {
	for _, f := range []string{"acta-envelope.json", "decision-receipt.json"} {
		data := readVector(t, "agtv-negative-embedded-key/"+f)
		wantResult(t, f+" no key", Verify(data, Options{}), Undecidable, CauseEmbeddedKeyOnly)
		wantResult(t, f+" conformance key", Verify(data, Options{Keys: PinnedKey(pub(conformanceKey))}), Invalid, "")
		wantResult(t, f+" bystander key", Verify(data, Options{Keys: PinnedKey(pub(bystanderKey))}), Invalid, "")
		// The adversary's key does verify: the signature is genuine, the key is not trusted.
		wantResult(t, f+" adversary key", Verify(data, Options{Keys: PinnedKey(pub(adversaryKey))}), Valid, "")
	}
}

func TestVeritasActaArtifacts(t *testing.T) {
	var doc struct {
		Meta struct {
			Keypair struct {
				PublicKey string `json:"public_key"`
			} `json:"keypair"`
		} `json:"_meta"`
		Vectors []struct {
			Name      string                     `json:"name"`
			Payload   map[string]json.RawMessage `json:"payload"`
			Canonical string                     `json:"canonical"`
			Hash      string                     `json:"hash"`
			Signature string                     `json:"signature"`
		} `json:"vectors"`
	}
	decodeVector(t, "veritasacta-artifacts/test-vectors.json", &doc)
	keys := mustHexKey(t, doc.Meta.Keypair.PublicKey)
	for _, v := range doc.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			payload, _ := json.Marshal(v.Payload)
			canonical, err := CanonicalizeJSON(payload)
			if err != nil {
				t.Fatal(err)
			}
			if v.Canonical != "" && string(canonical) != v.Canonical {
				t.Errorf("canonical = %s, want %s", canonical, v.Canonical)
			}
			if sum := sha256.Sum256(canonical); hex.EncodeToString(sum[:]) != v.Hash {
				t.Errorf("hash = %x, want %s", sum, v.Hash)
			}
			v.Payload["signature"], _ = json.Marshal(v.Signature)
			artifact, _ := json.Marshal(v.Payload)
			wantResult(t, v.Name, Verify(artifact, Options{Keys: keys}), Valid, "")
		})
	}
}

func TestVeritasActaV2(t *testing.T) {
	rfcKey := mustHexKey(t, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	sample := readVector(t, "veritasacta-verify/sample-receipt.json")
	r := Verify(sample, Options{Keys: rfcKey})
	wantResult(t, "sample", r, Valid, "")
	if r.KID != Thumbprint(rfcKey.Keys[0].Public) {
		t.Errorf("kid %s is not the RFC 7638 thumbprint %s", r.KID, Thumbprint(rfcKey.Keys[0].Public))
	}

	var bundle struct {
		Verification struct {
			SigningKeys json.RawMessage `json:"signing_keys"`
		} `json:"verification"`
		Receipts []json.RawMessage `json:"receipts"`
	}
	decodeVector(t, "veritasacta-verify/cross-verify-bundle.json", &bundle)
	jwks, err := ParseJWKS([]byte(`{"keys":` + string(bundle.Verification.SigningKeys) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	chain := make([][]byte, len(bundle.Receipts))
	for i, r := range bundle.Receipts {
		chain[i] = r
	}
	results := VerifyChain(chain, Options{Keys: jwks})
	for i, r := range results {
		wantResult(t, "bundle", r, Valid, "")
		if r.Legacy != "" {
			t.Errorf("receipt %d: legacy %q, want a current link", i+1, r.Legacy)
		}
	}
	if got, want := results[len(results)-1].Hash, "sha256:a630e18f8a394f5b8f3488b6d6ffa1ce2193380b3ae35de8b7477b640fdacb6b"; got != want {
		t.Errorf("final hash = %s, want %s", got, want)
	}
	// A key set that does not name the receipt's kid leaves it undecidable.
	other := &KeySet{Keys: []Key{{ID: "other", Public: rfcKey.Keys[0].Public}}}
	if r := Verify(chain[0], Options{Keys: other}); r.Outcome != Undecidable || r.Cause != CauseNoTrustedKey {
		t.Errorf("Verify(unknown kid) = %v %s, want undecidable no_trusted_key", r.Outcome, r.Cause)
	}
}

func TestTraceActa(t *testing.T) {
	var exp struct {
		PublicKey       string                       `json:"signer_public_key_hex"`
		PolicyDigest    string                       `json:"current_policy_digest"`
		SessionID       string                       `json:"expected_session_id"`
		Chain           map[string]string            `json:"chain"`
		Results         map[string]map[string]string `json:"results"`
		ChainHeadOf02   string
		MismatchedKeyTx string
	}
	decodeVector(t, "trace-acta/expected.json", &exp)
	keys := mustHexKey(t, exp.PublicKey)
	for file, want := range exp.Results {
		t.Run(file, func(t *testing.T) {
			data := readVector(t, "trace-acta/"+file)
			sig := Verify(data, Options{Keys: keys})
			if got := map[bool]string{true: "pass", false: "fail"}[sig.Outcome == Valid]; got != want["signature"] {
				t.Fatalf("signature = %s (%s), want %s", got, sig.Detail, want["signature"])
			}
			checks := []struct {
				name  string
				opts  Options
				cause string
			}{
				{"policy_freshness", Options{Keys: keys, PolicyDigest: exp.PolicyDigest}, CausePolicyDigest},
				{"session_binding", Options{Keys: keys, SessionID: exp.SessionID}, CauseSession},
			}
			for _, c := range checks {
				if want[c.name] == "n/a" {
					continue
				}
				r := Verify(data, c.opts)
				got := map[bool]string{true: "pass", false: "fail"}[r.Outcome == Valid]
				if got != want[c.name] || (got == "fail" && r.Cause != c.cause) {
					t.Errorf("%s = %s (%s), want %s", c.name, got, r.Cause, want[c.name])
				}
			}
			if prev, ok := exp.Chain[file]; ok {
				r := VerifyChain([][]byte{readVector(t, "trace-acta/"+prev), data}, Options{Keys: keys})[1]
				got := map[bool]string{true: "pass", false: "fail"}[r.Outcome == Valid]
				if got != want["chain"] {
					t.Errorf("chain = %s (%s), want %s", got, r.Detail, want["chain"])
				}
				if got == "pass" && !strings.Contains(r.Legacy, "bare-hex") {
					t.Errorf("legacy = %q, want the draft-02 bare-hex link reported", r.Legacy)
				}
			}
		})
	}
	h, _ := Hash(readVector(t, "trace-acta/02-valid-denied.json"))
	if want := "sha256:ddf7efb089f7504bbe880a623976b34be04b0bd4a991cdec12288841030229e4"; h != want {
		t.Errorf("Hash(02) = %s, want %s", h, want)
	}
	wrong := mustHexKey(t, string(readVector(t, "trace-acta/mismatched-signer-public-key.txt")))
	wantResult(t, "mismatched key", Verify(readVector(t, "trace-acta/01-valid-accepted.json"), Options{Keys: wrong}), Invalid, "")
}

func TestTraceActionReceipts(t *testing.T) {
	tests := []struct {
		file string
		want Outcome
	}{
		{"01-valid-controller-accepted.json", Valid},
		{"02-valid-controller-rejected.json", Valid},
		{"04-signature-key-mismatch.json", Invalid},
		{"14-receipt-issuer-key-unknown.json", Undecidable},
		{"23-receipt-issuer-key-case-variant.json", Undecidable},
		{"24-receipt-signature-malformed.json", Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var doc struct {
				Action   map[string]any             `json:"action"`
				Keys     map[string]json.RawMessage `json:"trusted_issuer_keys"`
				Receipt  json.RawMessage            `json:"receipt"`
				Evidence json.RawMessage            `json:"evidence"`
			}
			decodeVector(t, "trace-action-receipts/"+tt.file, &doc)
			set := &KeySet{}
			for id, k := range doc.Keys {
				var j jwk
				json.Unmarshal(k, &j)
				x, _ := base64.RawURLEncoding.DecodeString(j.X)
				set.Keys = append(set.Keys, Key{ID: id, Public: x})
			}
			wantResult(t, tt.file, Verify(doc.Receipt, Options{Keys: set}), tt.want, "")
			if tt.want != Valid {
				return
			}
			// action_ref and evidence_hash are JCS hashes too.
			ref := map[string]any{}
			for _, k := range []string{"agent_id", "action_type", "action_scope", "action_timestamp"} {
				ref[k] = doc.Action[k]
			}
			if h, _ := HashJSON(ref); h != doc.Action["action_ref"] {
				t.Errorf("action_ref = %s, want %s", h, doc.Action["action_ref"])
			}
			rec, _ := ParseObject(doc.Receipt)
			ev, _ := Parse(doc.Evidence)
			if h, _ := HashJSON(ev); h != rec["evidence_hash"] {
				t.Errorf("evidence_hash = %s, want %s", h, rec["evidence_hash"])
			}
		})
	}
}

func TestScopeBlindComposition(t *testing.T) {
	dir := "scopeblind-examples-composition/"
	sb := mustHexKey(t, string(readVector(t, dir+"scopeblind-pubkey.txt")))
	aps := mustHexKey(t, string(readVector(t, dir+"aps-receipts/gateway-pubkey.txt")))
	for _, f := range []string{"aps-receipts/permit.json", "aps-receipts/evaluation.json", "aps-receipts/outcome.json"} {
		wantResult(t, f, Verify(readVector(t, dir+f), Options{Keys: aps}), Valid, "")
	}
	chain := [][]byte{readVector(t, dir+"scopeblind-policy-eval.json"), readVector(t, dir+"scopeblind-execution.json")}
	results := VerifyChain(chain, Options{Keys: sb})
	wantResult(t, "policy-eval", results[0], Valid, "")
	wantResult(t, "execution", results[1], Valid, "")
	if !strings.Contains(results[0].Legacy, "null genesis") || !strings.Contains(results[1].Legacy, "payload-only") {
		t.Errorf("legacy = %q, %q, want null genesis and payload-only", results[0].Legacy, results[1].Legacy)
	}
}
