package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// longWay is what Sign signed before appendPayload: json.Marshal, then JCS.
func longWay(t *testing.T, p *Payload) []byte {
	t.Helper()
	j, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CanonicalizeJSON(j)
	if err != nil {
		t.Fatalf("CanonicalizeJSON(%s): %v", j, err)
	}
	return c
}

// fillPayload sets Payload's fields from data, by reflection, so that a
// field added to Payload and forgotten by appendPayload shows as a
// difference: strings take the chunks of strs in turn, integers the
// 8-byte words of ints, and bit i of mask says whether the i-th field
// that can be absent (a pointer or a slice) is set.
func fillPayload(strs []string, ints []byte, mask uint64) *Payload {
	p := &Payload{}
	v := reflect.ValueOf(p).Elem()
	si, ii, bit := 0, 0, 0
	nextStr := func() string {
		s := ""
		if len(strs) > 0 {
			s = strs[si%len(strs)]
		}
		si++
		return s
	}
	nextInt := func() int64 {
		if len(ints) < 8 {
			return int64(ii)
		}
		off := (ii * 8) % (len(ints) - 7)
		ii++
		return int64(binary.LittleEndian.Uint64(ints[off:]))
	}
	nextBit := func() bool { bit++; return mask&(1<<(bit-1)) != 0 }
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(nextStr())
		case reflect.Int64:
			f.SetInt(nextInt())
		case reflect.Slice:
			if nextBit() {
				f.Set(reflect.ValueOf([]string{nextStr(), nextStr()}))
			}
		case reflect.Pointer:
			if !nextBit() {
				continue
			}
			switch f.Type().Elem().Kind() {
			case reflect.Int64:
				n := nextInt()
				f.Set(reflect.ValueOf(&n))
			case reflect.Bool:
				b := nextBit()
				f.Set(reflect.ValueOf(&b))
			case reflect.Struct: // Confinement
				f.Set(reflect.ValueOf(&Confinement{Mechanism: nextStr(), Digest: nextStr(), Unconfined: nextBit()}))
			default:
				panic("fillPayload: a Payload field of a kind it does not know: " + f.Type().String())
			}
		default:
			panic("fillPayload: a Payload field of a kind it does not know: " + f.Type().String())
		}
	}
	return p
}

// appendPayload writes what json.Marshal then JCS write, for payloads with
// every member set, none, and the values JCS treats apart.
func TestAppendPayload(t *testing.T) {
	for _, tt := range []struct {
		name   string
		p      *Payload
		wantOK bool
	}{
		{"every member", fillPayload([]string{"a", "sha256:00ff", "é\u2028<&>\"\\\n\x01\x7f"}, []byte("\x01\x00\x00\x00\x00\x00\x00\x00\x02\x03\x00\x00\x00\x00\x00\x00"), ^uint64(0)), true},
		{"every member, zero integers and false", fillPayload([]string{"x"}, make([]byte, 16), 0b0101_0101_0101), true},
		{"none", &Payload{}, true},
		{"decision", &Payload{Type: TypeDecision, Spec: Spec, IssuedAt: "2026-01-01T00:00:00.000Z", IssuerID: "sb:issuer:x", SessionID: "s",
			Sequence: 3, PreviousReceiptHash: "sha256:ab", HookEvent: PreToolUse, ToolName: "Bash", Decision: Allow, PolicyIDs: []string{"b", "a"}}, true},
		{"unconfined", &Payload{Type: "t", Confinement: &Confinement{Unconfined: true}}, true},
		{"empty confinement", &Payload{Type: "t", Confinement: &Confinement{}}, true},
		{"negative", &Payload{Sequence: -5, HookLatencyMs: new(int64)}, true},
		{"largest exact", &Payload{Sequence: 1<<53 - 1, IssuerSequence: -(1<<53 - 1)}, true},
		{"2^53", &Payload{Sequence: 1 << 53}, false},
		{"invalid UTF-8", &Payload{ToolName: "a\xffb"}, false},
		{"invalid UTF-8 in a list", &Payload{PolicyIDs: []string{"ok", "\xc3"}}, false},
		{"invalid UTF-8 in the confinement", &Payload{Confinement: &Confinement{Digest: "\xed\xa0\x80"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendPayload(nil, tt.p)
			if ok != tt.wantOK {
				t.Fatalf("appendPayload(%+v) ok = %v, want %v", tt.p, ok, tt.wantOK)
			}
			if want := longWay(t, tt.p); ok && !bytes.Equal(got, want) {
				t.Errorf("appendPayload = %s\nwant           %s", got, want)
			}
		})
	}
}

// FuzzAppendPayload checks that appendPayload writes the bytes json.Marshal
// and JCS write whenever it says it can, and that Sign signs them.
func FuzzAppendPayload(f *testing.F) {
	f.Add([]byte("a\x00sha256:00\x00b"), []byte("\x01\x00\x00\x00\x00\x00\x00\x00"), uint64(0xffff))
	f.Add([]byte("\x00é\u2028\x00<script>\x00\xff"), []byte("\xff\xff\xff\xff\xff\xff\x1f\x00\x00\x00\x00\x00\x00\x00\x20\x00"), uint64(0x5555))
	f.Add([]byte(""), []byte(""), uint64(0))
	key, _ := GenerateKey()
	f.Fuzz(func(t *testing.T, strs, ints []byte, mask uint64) {
		var parts []string
		for _, s := range bytes.Split(strs, []byte{0}) {
			parts = append(parts, string(s))
		}
		p := fillPayload(parts, ints, mask)
		got, ok := appendPayload(nil, p)
		if !ok {
			return
		}
		if want := longWay(t, p); !bytes.Equal(got, want) {
			t.Fatalf("appendPayload = %s\nwant           %s", got, want)
		}
		// Sign signs those bytes: Ed25519 is deterministic.
		p.IssuerID, p.Type, p.SessionID = KID(key.Public().(ed25519.PublicKey)), "t", "s"
		if p.Spec == "" || p.IssuedAt == "" {
			p.Spec, p.IssuedAt = Spec, "2026-01-01T00:00:00.000Z"
		}
		r, err := Sign(key, *p)
		if err != nil {
			t.Fatalf("Sign = %v", err)
		}
		if want := SignCanonical(key, longWay(t, p)); !bytes.Equal(r, want) {
			t.Fatalf("Sign = %s\nwant %s", r, want)
		}
	})
}

// unsignedMember names a member outside the signed envelope's, the empty
// name and those that sort first included.
func TestUnsignedMember(t *testing.T) {
	sig := map[string]any{"alg": "EdDSA", "kid": "k", "sig": strings.Repeat("ab", 64)}
	for _, tt := range []struct {
		name     string
		obj, sig map[string]any
		want     string
	}{
		{"exact", map[string]any{"payload": 1, "signature": 1}, sig, ""},
		{"empty name", map[string]any{"payload": 1, "signature": 1, "": 1}, sig, `member ""`},
		{"two others, the first in order", map[string]any{"payload": 1, "z": 1, "signature": 1, "a": 1}, sig, `member "a"`},
		{"in the signature", map[string]any{"payload": 1, "signature": 1}, map[string]any{"alg": "EdDSA", "kid": "k", "sig": "x", "": 1}, `member "" of signature`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := unsignedMember(tt.obj, tt.sig); got != tt.want {
				t.Errorf("unsignedMember = %q, want %q", got, tt.want)
			}
		})
	}
}
