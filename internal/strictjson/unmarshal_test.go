package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

type strictDoc struct {
	Kind    string            `json:"kind"`
	Entries []strictEntry     `json:"entries,omitempty"`
	Labels  map[string]int    `json:"labels,omitempty"`
	Any     any               `json:"any,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Skip    string            `json:"-"`
	Nested  *strictEntry      `json:"nested,omitempty"`
	Hashes  map[string]string `json:"hashes,omitempty"`
}

type strictEntry struct {
	Index uint64 `json:"index"`
	Leaf  string `json:"leaf,omitempty"`
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" for accepted, else a part of the error
	}{
		{"plain", `{"kind":"fork","entries":[{"index":1,"leaf":"x"}],"labels":{"a":1,"b":2}}`, ""},
		{"any and raw", `{"any":{"a":[1,{"b":null}]},"raw":{"x":1}}`, ""},
		{"exact duplicate", `{"kind":"fork","kind":"bad_entry"}`, "differ only in case"},
		{"case duplicate", `{"kind":"fork","KIND":"bad_entry"}`, "differ only in case"},
		{"Kelvin sign duplicate", "{\"kind\":\"fork\",\"\u212aind\":\"bad_entry\"}", "differ only in case"},
		{"Kelvin sign escaped", `{"kind":"fork","\u212aind":"bad_entry"}`, "differ only in case"},
		{"long s duplicate", `{"hashes":{"s":"1","ſ":"2"}}`, "differ only in case"},
		{"case variant alone", `{"Kind":"fork"}`, `unknown member "Kind"`},
		{"unknown member", `{"kind":"fork","kinds":"x"}`, `unknown member "kinds"`},
		{"ignored field named", `{"Skip":"x"}`, `unknown member "Skip"`},
		{"nested duplicate", `{"entries":[{"index":1,"INDEX":2}]}`, "differ only in case"},
		{"pointer struct", `{"nested":{"index":1,"Leaf":"x"}}`, `unknown member "Leaf"`},
		{"map key duplicate", `{"labels":{"a":1,"A":2}}`, "differ only in case"},
		{"duplicate under any", `{"any":{"x":{"a":1,"A":2}}}`, "differ only in case"},
		{"duplicate in raw", `{"raw":{"a":1,"A":2}}`, "differ only in case"},
		{"invalid UTF-8", "{\"kind\":\"\xff\"}", "invalid UTF-8"},
		{"trailing data", `{"kind":"fork"} {}`, "after the document"},
		{"too deep", `{"any":` + strings.Repeat("[", 80) + strings.Repeat("]", 80) + `}`, "nesting deeper"},
		{"malformed", `{"kind":`, "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d strictDoc
			err := Unmarshal([]byte(tt.in), &d)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Unmarshal(%s) = %v, want nil", tt.in, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Unmarshal(%s) = %v, want an error with %q", tt.in, err, tt.want)
			}
		})
	}
}

// FuzzUnmarshal: never a panic, and what is accepted is what
// encoding/json reads, with no two member names of one object folding
// together.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{"kind":"fork","entries":[{"index":1}]}`, `{"kind":"a","KIND":"b"}`, `{"labels":{"k":1,"\u212a":2}}`, `{"any":[{"a":1}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d strictDoc
		if err := Unmarshal(data, &d); err != nil {
			return
		}
		var plain strictDoc
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("Unmarshal accepted %q, which json.Unmarshal refuses: %v", data, err)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(plain)
		if string(a) != string(b) {
			t.Fatalf("Unmarshal(%q) = %s, json.Unmarshal %s", data, a, b)
		}
	})
}
