package disclosure

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// disclosed signs a decision receipt over input (salted or not) and
// returns its disclosure.
func disclosed(t testing.TB, key ed25519.PrivateKey, input string, salted bool) *Disclosure {
	t.Helper()
	p := receipts.Payload{Type: receipts.TypeDecision, SessionID: "s1", Sequence: 1, HookEvent: receipts.PreToolUse,
		ToolName: "Bash", Decision: receipts.Deny, Reason: "cedar_deny"}
	d := &Disclosure{Type: Type, ToolInput: json.RawMessage(input)}
	if salted {
		salt := make([]byte, receipts.SaltSize)
		salt[0] = 7
		d.Salt = hex.EncodeToString(salt)
		p.ToolInputCommitment = receipts.InputCommitment(salt, []byte(input))
	} else {
		p.ToolInputHash = receipts.InputHash([]byte(input))
	}
	rec, err := receipts.Sign(key, p)
	if err != nil {
		t.Fatal(err)
	}
	d.Receipt = rec
	return d
}

func TestVerify(t *testing.T) {
	key, _ := receipts.GenerateKey()
	keys := receipts.PinnedKey(key.Public().(ed25519.PublicKey))
	other, _ := receipts.GenerateKey()
	const input = `{"command":"git push --force origin main"}`
	for _, tc := range []struct {
		name   string
		d      func() *Disclosure
		keys   *receipts.KeySet
		want   error // nil: valid
		opened bool  // an *receipts.OpenError
	}{
		{name: "hash", d: func() *Disclosure { return disclosed(t, key, input, false) }, keys: keys},
		{name: "salted", d: func() *Disclosure { return disclosed(t, key, input, true) }, keys: keys},
		{name: "another input", keys: keys, want: ErrMismatch, d: func() *Disclosure {
			d := disclosed(t, key, input, false)
			d.ToolInput = json.RawMessage(`{"command":"git status"}`)
			return d
		}},
		{name: "another salt", keys: keys, want: ErrMismatch, d: func() *Disclosure {
			d := disclosed(t, key, input, true)
			d.Salt = hex.EncodeToString(make([]byte, receipts.SaltSize))
			return d
		}},
		{name: "a salt for a hash", keys: keys, want: ErrMismatch, d: func() *Disclosure {
			d := disclosed(t, key, input, false)
			d.Salt = hex.EncodeToString(make([]byte, receipts.SaltSize))
			return d
		}},
		{name: "another issuer", keys: keys, opened: true, d: func() *Disclosure { return disclosed(t, other, input, false) }},
		{name: "input re-encoded is the same input", keys: keys, d: func() *Disclosure {
			d := disclosed(t, key, input, false)
			d.ToolInput = json.RawMessage(`{ "command" : "git push --force origin main" }`)
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.d().Marshal(), tc.keys, nil)
			var oe *receipts.OpenError
			switch {
			case tc.opened && !errors.As(err, &oe):
				t.Errorf("Verify() = %v, want an OpenError", err)
			case !tc.opened && tc.want == nil && err != nil:
				t.Errorf("Verify() = %v, want valid", err)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("Verify() = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Verify(disclosed(t, key, input, false).Marshal(), nil, nil); err == nil {
		t.Error("Verify() without keys = nil, want an error")
	}
}

func FuzzVerify(f *testing.F) {
	key, _ := receipts.GenerateKey()
	keys := receipts.PinnedKey(key.Public().(ed25519.PublicKey))
	f.Add(disclosed(f, key, `{"command":"ls"}`, false).Marshal())
	f.Add(disclosed(f, key, `{"a":[1,2,{"b":null}]}`, true).Marshal())
	f.Add([]byte(`{"type":"docket-disclosure/v1","receipt":{},"tool_input":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		Verify(data, keys, nil) // never panics
	})
}
