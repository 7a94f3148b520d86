package receipts

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	key, _ := GenerateKey()
	other, _ := GenerateKey()
	keys := PinnedKey(pub(key))
	lat := int64(12)
	no := false
	full := Payload{Type: TypeDecision, SessionID: "s", Sequence: 2, PreviousReceiptHash: "sha256:" + strings.Repeat("ab", 32),
		HookEvent: "PreToolUse", Agent: "codex", ToolName: "Bash", ToolUseID: "t1", ToolInputHash: "sha256:" + strings.Repeat("cd", 32),
		Decision: Allow, Reason: "cedar_allow", PolicyDigest: "sha256:" + strings.Repeat("ef", 32), PolicyIDs: []string{"a", "b"},
		HookLatencyMs: &lat, IssuerSequence: 9, OpenSessions: []string{"x"}, Model: "m", Enforced: &no,
		Confinement: &Confinement{Mechanism: "landlock", Digest: "sha256:00"}, IssuedAt: "2026-11-21T12:00:00.000Z"}
	ran := true
	unmediated := Payload{Type: TypeDecision, SessionID: "s", HookEvent: UnmediatedCall, ToolName: "mcp__outside__echo", ToolUseID: "toolu_01",
		ToolInputHash: "sha256:" + strings.Repeat("cd", 32), ToolOutputHash: "sha256:" + strings.Repeat("ef", 32), Reason: ReasonNoDecision,
		TranscriptPosition: "s.jsonl:22", ToolRan: &ran, TranscriptHash: "unreadable: truncated at s.jsonl:40", IssuedAt: "2026-11-21T12:00:00.000Z"}
	signed := func(p Payload) []byte { return must(Sign(key, p)) }
	raw := func(payload string) []byte {
		payload = strings.Replace(payload, "{", `{"issued_at":"2026-11-21T12:00:00.000Z","issuer_id":"`+KID(pub(key))+`","session_id":"s","spec":"`+Spec+`",`, 1)
		return SignCanonical(key, must(CanonicalizeJSON([]byte(payload))))
	}
	tests := []struct {
		name  string
		data  []byte
		keys  *KeySet
		want  *Payload
		extra map[string]any
		cause string // "" for accepted
	}{
		{name: "every member", data: signed(full), keys: keys, want: &full},
		{name: "unmediated_call and transcript_hash", data: signed(unmediated), keys: keys, want: &unmediated},
		{name: "tool_ran not a boolean", data: raw(`{"type":"t","tool_ran":"yes"}`), cause: CauseMalformed},
		{name: "no keys reads", data: signed(full), want: &full},
		{name: "unconfined", data: raw(`{"type":"t","confinement":"unconfined"}`), keys: keys,
			want: &Payload{Type: "t", SessionID: "s", Spec: Spec, IssuerID: KID(pub(key)), IssuedAt: "2026-11-21T12:00:00.000Z", Confinement: &Confinement{Unconfined: true}}},
		{name: "unknown member kept", data: raw(`{"type":"t","x_vendor":[1]}`), keys: keys,
			want:  &Payload{Type: "t", SessionID: "s", Spec: Spec, IssuerID: KID(pub(key)), IssuedAt: "2026-11-21T12:00:00.000Z"},
			extra: map[string]any{"x_vendor": []any{json.Number("1")}}},
		{name: "another key", data: signed(full), keys: PinnedKey(pub(other)), cause: CauseKIDMismatch},
		{name: "no key of its kid", data: signed(full), keys: &KeySet{}, cause: CauseNoTrustedKey},
		{name: "bad signature", data: []byte(strings.Replace(string(signed(full)), `"codex"`, `"cursor"`, 1)), keys: keys, cause: CauseBadSignature},
		{name: "bad signature unseen without keys", data: []byte(strings.Replace(string(signed(full)), `"codex"`, `"cursor"`, 1)),
			want: func() *Payload { p := full; p.Agent = "cursor"; return &p }()},
		{name: "folded pair", data: raw(`{"type":"t","tool_name":"a","Tool_name":"b"}`), cause: CauseMalformed},
		{name: "folded name alone", data: raw(`{"type":"t","Tool_name":"b"}`), keys: keys, cause: CauseMalformed},
		{name: "wrong type", data: raw(`{"type":"t","sequence":"1"}`), keys: keys, cause: CauseMalformed},
		{name: "fraction", data: raw(`{"type":"t","sequence":1.5}`), cause: CauseMalformed},
		{name: "bad confinement", data: raw(`{"type":"t","confinement":{"mechanism":"x","Digest":"y"}}`), cause: CauseMalformed},
		{name: "unsigned member", data: []byte(strings.Replace(string(signed(full)), `{"payload"`, `{"x":1,"payload"`, 1)), cause: CauseUnsignedMember},
		{name: "flat shape", data: []byte(`{"type":"t","signature":"00"}`), cause: CauseUnknownShape},
		{name: "not JSON", data: []byte(`{`), cause: CauseMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Open(tt.data, tt.keys)
			if tt.cause != "" {
				var oe *OpenError
				if !errors.As(err, &oe) || oe.Result.Cause != tt.cause || oe.Result.Outcome == Valid {
					t.Fatalf("Open(%s) = %v, want an *OpenError with cause %s", tt.data, err, tt.cause)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%s) = %v, want nil", tt.data, err)
			}
			want := *tt.want
			if want.Spec == "" {
				want.Spec, want.IssuerID = Spec, KID(pub(key))
			}
			if !reflect.DeepEqual(got.Payload, want) || !reflect.DeepEqual(got.Extra, tt.extra) {
				t.Errorf("Open(%s).Payload = %+v %v, want %+v %v", tt.data, got.Payload, got.Extra, want, tt.extra)
			}
			if got.Hash != must(Hash(tt.data)) || got.KID != KID(pub(key)) || (tt.keys != nil) != (got.Key != nil) {
				t.Errorf("Open(%s) = hash %s kid %s key %x, want hash %s kid %s, key iff keys", tt.data, got.Hash, got.KID, got.Key, must(Hash(tt.data)), KID(pub(key)))
			}
			if len(got.Signature) != 64 {
				t.Errorf("Open(%s).Signature = %x, want 64 bytes", tt.data, got.Signature)
			}
		})
	}
}

func TestEntryOpen(t *testing.T) {
	key, _ := GenerateKey()
	r := signChain(t, key, 1)[0]
	e, err := ParseEntry(must(NewEntry(pub(key), r)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Open()
	want, err2 := Open(r, PinnedKey(pub(key)))
	if err != nil || err2 != nil || !reflect.DeepEqual(got.Payload, want.Payload) || got.Hash != want.Hash || !got.Key.Equal(want.Key) {
		t.Errorf("Entry.Open() = %+v, %v; want %+v, %v", got, err, want, err2)
	}
}

// FuzzOpen: Open never panics, never reads a receipt as verified without
// keys, and what it reads is the signed payload: the typed payload
// marshalled again, with Extra, is the payload's JCS, but for members it
// holds as zero values (which omitempty leaves out).
func FuzzOpen(f *testing.F) {
	addVectorSeeds(f)
	key, _ := GenerateKey()
	f.Add(must(Sign(key, Payload{Type: TypeDecision, SessionID: "s", Sequence: 3, PolicyIDs: []string{"a"}, Confinement: &Confinement{Unconfined: true}})))
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := Open(data, nil)
		if err != nil {
			return
		}
		if rc.Key != nil {
			t.Fatalf("Open(%q, nil).Key = %x, want nil", data, rc.Key)
		}
		orig := must(ParseObject(data))["payload"].(map[string]any)
		again := must(ParseObject(must(json.Marshal(rc.Payload))))
		for k, v := range orig {
			if _, ok := rc.Extra[k]; ok {
				continue
			}
			a, b := must(Canonicalize(v)), []byte(nil)
			if w, ok := again[k]; ok {
				b = must(Canonicalize(w))
			}
			if string(a) != string(b) && !zero(v) {
				t.Fatalf("Open(%q): member %s reads back as %s, signed %s", data, k, b, a)
			}
		}
		for k := range again {
			if _, ok := orig[k]; !ok {
				t.Fatalf("Open(%q): member %s appears from nowhere", data, k)
			}
		}
	})
}

func zero(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case json.Number:
		i, err := v.Int64()
		return err == nil && i == 0
	case []any:
		return len(v) == 0
	}
	return v == nil
}
