package trace

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/receipts"
)

// vector is a trace-spec canonicalization-boundary fixture.
type vector struct {
	Name       string          `json:"name"`
	TrustedKey map[string]any  `json:"trusted_key"`
	Record     json.RawMessage `json:"record"`
	Expected   struct {
		Outcome string `json:"outcome"`
	} `json:"expected"`
	DivergesUnder []string `json:"diverges_under"`
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	files, err := filepath.Glob("../testdata/vectors/trace-canonicalization/*.json")
	if err != nil || len(files) != 4 {
		t.Fatalf("canonicalization vectors: %v, %d files, want 4", err, len(files))
	}
	var vs []vector
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func keySetOf(t *testing.T, jwk map[string]any) *receipts.KeySet {
	t.Helper()
	j, _ := json.Marshal(map[string]any{"keys": []any{jwk}})
	ks, err := receipts.ParseJWKS(j)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// vectorTime is the vectors' iat: they are fixed in time, so they are
// checked "now" at that instant, as their README says.
var vectorTime = time.Unix(1785000000, 0)

// TestCanonicalizationVectors: the four records of trace-spec's
// canonicalization-boundary set, signed over RFC 8785 bytes, all verify.
func TestCanonicalizationVectors(t *testing.T) {
	for _, v := range readVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			rep := Verify(v.Record, Options{Keys: keySetOf(t, v.TrustedKey), Now: vectorTime})
			if rep.Outcome != receipts.Valid || v.Expected.Outcome != "verified" {
				t.Fatalf("Verify(%s) = %v %+v, want valid (expected %s)", v.Name, rep.Outcome, rep.Checks, v.Expected.Outcome)
			}
			// Any changed byte of a signed member fails.
			bad := bytes.Replace(v.Record, []byte(`"data_class": "`), []byte(`"data_class": "x`), 1)
			if rep := Verify(bad, Options{Keys: keySetOf(t, v.TrustedKey), Now: vectorTime}); rep.Outcome != receipts.Invalid || rep.Checks[0].Cause != receipts.CauseBadSignature {
				t.Errorf("Verify(changed data_class) = %v %+v, want invalid bad_signature", rep.Outcome, rep.Checks)
			}
		})
	}
}

// TestLegacyFormsDiverge is a known-answer test of the legacy serializations
// against the vectors' own diverges_under lists: a form computes bytes other
// than RFC 8785's exactly when the vector names it.
func TestLegacyFormsDiverge(t *testing.T) {
	for _, v := range readVectors(t) {
		obj, err := receipts.ParseObject(v.Record)
		if err != nil {
			t.Fatal(err)
		}
		delete(obj, "signature")
		jcs, _ := receipts.Canonicalize(obj)
		for _, f := range LegacyForms {
			b, err := f.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := !bytes.Equal(b, jcs), slices.Contains(v.DivergesUnder, f.Name); got != want {
				t.Errorf("%s: %s diverges = %v, want %v\n%s\n%s", v.Name, f.Name, got, want, b, jcs)
			}
		}
	}
}

// TestLegacySignatureNamed: a record signed over json.dumps(sort_keys=True)
// bytes is invalid with the cause named, not a bare signature failure.
func TestLegacySignatureNamed(t *testing.T) {
	v := readVectors(t)[2] // 03-utf16-key-order: every legacy form diverges
	if len(v.DivergesUnder) != len(LegacyForms) {
		t.Fatalf("%s diverges under %v", v.Name, v.DivergesUnder)
	}
	seed := make([]byte, ed25519.SeedSize)
	seed[31] = 7
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	obj, _ := receipts.ParseObject(v.Record)
	delete(obj, "signature")
	obj["cnf"].(map[string]any)["jwk"].(map[string]any)["x"] = base64.RawURLEncoding.EncodeToString(pub)
	for _, f := range LegacyForms {
		b, _ := f.Marshal(obj)
		obj["signature"] = base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, b))
		rec, _ := json.Marshal(obj)
		delete(obj, "signature")
		rep := Verify(rec, Options{Keys: receipts.PinnedKey(pub), Now: vectorTime})
		if rep.Outcome != receipts.Invalid || rep.Checks[0].Cause != CauseLegacyCanon || !strings.Contains(rep.Checks[0].Detail, f.Python) {
			t.Errorf("Verify(signed as %s) = %v %+v, want invalid %s naming it", f.Name, rep.Outcome, rep.Checks, CauseLegacyCanon)
		}
	}
}

func TestPythonFloat(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
		{1.5e16, "1.5e+16"}, {-2.5, "-2.5"}, {1e-7, "1e-07"}, {123.456, "123.456"}, {1e100, "1e+100"},
	} {
		if got := pythonFloat(tc.in); got != tc.want {
			t.Errorf("pythonFloat(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestPublishedExamples: trace-spec's example records are schema-valid and
// unsigned, so a verifier rejects them as not being Trust Records.
func TestPublishedExamples(t *testing.T) {
	files, _ := filepath.Glob("../testdata/vectors/trace-examples/*.json")
	if len(files) != 5 {
		t.Fatalf("%d example records, want 5", len(files))
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		obj, err := receipts.ParseObject(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkSchema(obj); err != nil {
			t.Errorf("checkSchema(%s) = %v", f, err)
		}
		if rep := Verify(b, Options{}); rep.Outcome != receipts.Invalid || rep.Checks[0].Cause != CauseUnsigned {
			t.Errorf("Verify(%s) = %v %+v, want invalid unsigned", f, rep.Outcome, rep.Checks)
		}
	}
}

// session signs a session chain: start, an allowed Bash call that ran, a
// denied call, end.
func session(t testing.TB, key ed25519.PrivateKey, digest string) [][]byte {
	t.Helper()
	var chain [][]byte
	prev := ""
	add := func(p receipts.Payload) string {
		p.SessionID, p.Sequence, p.PreviousReceiptHash, p.Agent = "s1", int64(len(chain)+1), prev, "codex"
		r, err := receipts.Sign(key, p)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, r)
		prev = receipts.ChainHash(r)
		return prev
	}
	dur := int64(42)
	add(receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: receipts.SessionStart, LifecycleEvent: receipts.LifecycleSessionStart})
	allow := add(receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: Digest([]byte("in1")),
		Decision: receipts.Allow, Reason: "cedar_allow", PolicyDigest: digest})
	add(receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PostToolUse, ToolName: "Bash", ToolInputHash: Digest([]byte("in1")),
		ToolOutputHash: Digest([]byte("out1")), Decision: receipts.Allow, Reason: receipts.ReasonExecuted, DecisionReceiptHash: allow, ToolDurationMs: &dur})
	add(receipts.Payload{Type: receipts.TypeDecision, HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolInputHash: Digest([]byte("in2")),
		Decision: receipts.Deny, Reason: "cedar_deny", PolicyDigest: digest})
	add(receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: receipts.SessionEnd, LifecycleEvent: receipts.LifecycleSessionEnd})
	return chain
}

// export builds and signs the record of a chain, as docket export trace does.
func export(t testing.TB, key ed25519.PrivateKey, chain [][]byte, now time.Time) (record, transcript []byte) {
	t.Helper()
	s, err := ReadSession(chain)
	if err != nil {
		t.Fatal(err)
	}
	transcript, err = MarshalTranscript(s.Calls)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Key: key, Session: s, Transcript: transcript, TranscriptURI: "https://example.com/t.json",
		Measurement: Digest([]byte("docket")), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	record, err = Sign(r, key)
	if err != nil {
		t.Fatal(err)
	}
	return record, transcript
}

func TestRoundTrip(t *testing.T) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	pub := key.Public().(ed25519.PublicKey)
	digest := Digest([]byte("policy"))
	chain := session(t, key, digest)
	now := time.Unix(1790000000, 0)
	record, transcript := export(t, key, chain, now)

	s, _ := ReadSession(chain)
	if len(s.Calls) != 2 || s.Calls[0].OutputHash != Digest([]byte("out1")) || *s.Calls[0].DurationMs != 42 ||
		s.Calls[1].Decision != receipts.Deny || s.Calls[1].OutputHash != "" {
		t.Fatalf("ReadSession calls = %+v", s.Calls)
	}
	var r Record
	json.Unmarshal(record, &r)
	if r.Subject != receipts.DIDKey(pub) || !strings.HasPrefix(r.Subject, "did:key:z6Mk") || r.Policy.BundleHash != digest ||
		r.Runtime.Platform != "software-only" || *r.ToolTranscript.CallCount != 2 || r.ToolTranscript.Hash != Digest(transcript) {
		t.Fatalf("record = %s", record)
	}

	opts := Options{Keys: receipts.PinnedKey(pub), Now: now, Transcript: transcript, Chain: chain}
	if rep := Verify(record, opts); rep.Outcome != receipts.Valid || len(rep.Checks) != 3 {
		t.Fatalf("Verify = %v %+v, want valid with 3 checks", rep.Outcome, rep.Checks)
	}

	dropped, _ := MarshalTranscript(s.Calls[:1])
	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{4}, 32))
	resigned := func(edit func(*Record)) []byte {
		var r Record
		json.Unmarshal(record, &r)
		edit(&r)
		b, _ := Sign(&r, key)
		return b
	}
	for _, tc := range []struct {
		name   string
		record []byte
		opts   func(*Options)
		want   receipts.Outcome
		cause  string
	}{
		{"changed transcript byte", record, func(o *Options) { o.Transcript = bytes.Replace(transcript, []byte("Bash"), []byte("Bask"), 1) },
			receipts.Invalid, CauseTranscriptHash},
		{"dropped call", record, func(o *Options) { o.Transcript = dropped }, receipts.Invalid, CauseTranscriptHash},
		{"dropped call, record re-signed", resigned(func(r *Record) {
			n := 1
			r.ToolTranscript.Hash, r.ToolTranscript.CallCount = Digest(dropped), &n
		}), func(o *Options) { o.Transcript = dropped }, receipts.Invalid, CauseTranscript},
		{"call count re-signed", resigned(func(r *Record) { n := 3; r.ToolTranscript.CallCount = &n }), nil, receipts.Invalid, CauseCallCount},
		{"other policy re-signed", resigned(func(r *Record) { r.Policy.BundleHash = Digest([]byte("lax")) }), nil, receipts.Invalid, receipts.CausePolicyDigest},
		{"changed record field", bytes.Replace(record, []byte(`"enforce"`), []byte(`"advisory"`), 1), nil, receipts.Invalid, receipts.CauseBadSignature},
		{"unknown member", bytes.Replace(record, []byte(`"iat"`), []byte(`"extra": 1, "iat"`), 1), nil, receipts.Invalid, CauseSchema},
		{"untrusted key", record, func(o *Options) { o.Keys = receipts.PinnedKey(otherKey.Public().(ed25519.PublicKey)) }, receipts.Undecidable, CauseUntrustedKey},
		{"stale", record, func(o *Options) { o.Now = now.Add(25 * time.Hour) }, receipts.Invalid, CauseStale},
		{"stale allowed", record, func(o *Options) { o.Now, o.MaxAge = now.Add(25*time.Hour), -1 }, receipts.Valid, ""},
		{"future", record, func(o *Options) { o.Now = now.Add(-time.Hour) }, receipts.Invalid, CauseFuture},
		{"no transcript", record, func(o *Options) { o.Transcript = nil }, receipts.Undecidable, CauseMissing},
		{"no chain", record, func(o *Options) { o.Chain = nil }, receipts.Undecidable, CauseMissing},
		{"chain of another key", record, func(o *Options) { o.Chain = session(t, otherKey, digest) }, receipts.Invalid, receipts.CauseKIDMismatch},
		{"chain of another trusted issuer", record, func(o *Options) {
			o.Chain = session(t, otherKey, digest)
			o.Keys = &receipts.KeySet{Keys: []receipts.Key{{Public: pub}, {Public: otherKey.Public().(ed25519.PublicKey)}}}
		}, receipts.Invalid, CauseIssuer},
		{"last receipt of another trusted issuer", resigned(func(r *Record) { r.ToolTranscript, r.Transparency = nil, "https://example.com/last.tlog-proof" }), func(o *Options) {
			o.Chain = session(t, otherKey, digest)
			o.Keys = &receipts.KeySet{Keys: []receipts.Key{{Public: pub}, {Public: otherKey.Public().(ed25519.PublicKey)}}}
			o.Proofs, o.Proof = &c2sp.ProofVerifier{}, []byte("not checked: the issuer differs")
		}, receipts.Invalid, CauseIssuer},
		{"members that differ only in case", bytes.Replace(record, []byte(`"kty"`), []byte(`"KTY": "OKP", "kty"`), 1), nil, receipts.Undecidable, receipts.CauseMalformed},
		{"malformed", []byte(`{"eat_profile":`), nil, receipts.Undecidable, receipts.CauseMalformed},
		{"v0.1 profile", bytes.Replace(record, []byte(Profile), []byte(profileV01), 1), nil, receipts.Invalid, CauseProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.opts != nil {
				tc.opts(&o)
			}
			rep := Verify(tc.record, o)
			last := rep.Checks[len(rep.Checks)-1]
			for _, c := range rep.Checks {
				if c.Outcome != receipts.Valid {
					last = c
					break
				}
			}
			if rep.Outcome != tc.want || last.Cause != tc.cause {
				t.Errorf("Verify = %v %+v, want %v %s", rep.Outcome, rep.Checks, tc.want, tc.cause)
			}
		})
	}
}

func TestDIDKey(t *testing.T) {
	// The did:key test vector of the W3C did:key specification (Ed25519).
	pub, _ := base64.RawURLEncoding.DecodeString("O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik")
	if got, want := receipts.DIDKey(pub), "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"; got != want {
		t.Errorf("DIDKey = %s, want %s", got, want)
	}
}

func FuzzVerify(f *testing.F) {
	for _, name := range []string{"01-non-ascii-values", "03-utf16-key-order"} {
		b, _ := os.ReadFile("../testdata/vectors/trace-canonicalization/" + name + ".json")
		var v vector
		json.Unmarshal(b, &v)
		f.Add([]byte(v.Record), []byte(`[]`))
	}
	f.Add([]byte(`{"eat_profile":"tag:agentrust-io.com,2026:trace-v0.2","signature":"AA"}`), []byte(`[{"call_index":0}]`))
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	ks := receipts.PinnedKey(key.Public().(ed25519.PublicKey))
	f.Fuzz(func(t *testing.T, record, transcript []byte) {
		rep := Verify(record, Options{Keys: ks, MaxAge: -1, Transcript: transcript, Chain: [][]byte{record}})
		if rep.Outcome == receipts.Valid && rep.Record == nil {
			t.Fatal("valid without a record")
		}
		ParseTranscript(transcript)
	})
}

func TestAppraise(t *testing.T) {
	at := time.Unix(1790000000, 0)
	for _, tc := range []struct {
		name     string
		findings []audit.Finding
		want     string
	}{
		{"none", nil, "affirming"},
		{"notice", []audit.Finding{{Kind: "open_session", Notice: true}}, "warning"},
		{"finding", []audit.Finding{{Kind: "open_session", Notice: true}, {Kind: "dropped"}}, "contraindicated"},
	} {
		a := Appraise(tc.findings, at)
		if a.Status != tc.want || a.Verifier != Verifier || a.Timestamp != at.Unix() {
			t.Errorf("Appraise(%s) = %+v, want status %s", tc.name, a, tc.want)
		}
	}
}

// FuzzTranscript: whatever parses as a transcript marshals to canonical
// bytes that parse back to the same transcript and marshal the same.
func FuzzTranscript(f *testing.F) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	s, _ := ReadSession(session(f, key, Digest([]byte("p"))))
	b, _ := MarshalTranscript(s.Calls)
	f.Add(b)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"call_index":1,"tool_name":"é\u2028","started_at":"x","decision":"allow","duration_ms":-1}]`))
	f.Add([]byte(`[{"call_index":0,"tool_name":"a","Tool_Name":"b","started_at":"x","decision":"allow"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		calls, err := ParseTranscript(data)
		if err != nil {
			return
		}
		once, err := MarshalTranscript(calls)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseTranscript(once)
		if err != nil {
			t.Fatalf("ParseTranscript(%s) = %v", once, err)
		}
		twice, _ := MarshalTranscript(again)
		if !bytes.Equal(once, twice) {
			t.Fatalf("round trip: %s != %s", once, twice)
		}
	})
}

// TestCaseFoldedMembers: a transcript entry or a receipt payload with a
// member that differs from another, or from a name it is read by, only in
// case is refused: a decoder that matches names without regard to case
// would read another call than the receipts' verifier.
func TestCaseFoldedMembers(t *testing.T) {
	for _, tc := range []struct{ name, transcript string }{
		{"both cases", `[{"call_index":0,"tool_name":"Bash","Tool_Name":"Read","started_at":"x","decision":"allow"}]`},
		{"another case", `[{"call_index":0,"TOOL_NAME":"Bash","started_at":"x","decision":"allow"}]`},
		{"kelvin sign", `[{"call_index":0,"tool_name":"Bash","started_at":"x","decision":"allow","\u212aey":1}]`},
	} {
		if calls, err := ParseTranscript([]byte(tc.transcript)); err == nil {
			t.Errorf("ParseTranscript(%s) = %+v, want an error", tc.name, calls)
		}
	}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	chain := session(t, key, Digest([]byte("p")))
	for _, tc := range []struct{ name, from, to string }{
		{"both cases", `"decision":"deny"`, `"decision":"deny","Decision":"allow"`},
		{"another case", `"decision":"deny"`, `"Decision":"deny"`},
		{"envelope", `"payload":`, `"Payload":{},"payload":`},
	} {
		edited := append([][]byte(nil), chain...)
		edited[3] = bytes.Replace(chain[3], []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(edited[3], chain[3]) {
			t.Fatalf("%s: %s not in %s", tc.name, tc.from, chain[3])
		}
		if s, err := ReadSession(edited); err == nil {
			t.Errorf("ReadSession(%s) = %+v, want an error", tc.name, s.Calls)
		}
	}
}
