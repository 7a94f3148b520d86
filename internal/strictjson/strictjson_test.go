package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

func parse(t testing.TB, s string) any {
	t.Helper()
	v, err := receipts.Parse([]byte(s))
	if err != nil {
		t.Fatalf("receipts.Parse(%s): %v", s, err)
	}
	return v
}

func TestCheckFold(t *testing.T) {
	tests := []struct {
		name, doc string
		path      string // of the refused object; "-" for none
	}{
		{"distinct", `{"x":1,"y":{"x":2},"z":[{"x":3}]}`, "-"},
		{"case", `{"x":"A","X":"B"}`, ""},
		{"nested", `{"cnf":{"jwk":{"kty":"OKP","x":"A","X":"B"}}}`, "cnf.jwk"},
		{"in an array", `{"calls":[{"tool_name":"a"},{"tool_name":"a","Tool_Name":"b"}]}`, "calls[1]"},
		{"kelvin sign", `{"k":1,"\u212a":2}`, ""},
		{"long s", `{"s":1,"\u017f":2}`, ""},
		{"camel case", `{"previousReceiptHash":"a","previousreceipthash":"b"}`, ""},
		{"not letters", `{"a_b":1,"a-b":2,"ab":3}`, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := strictjson.CheckFold(parse(t, tt.doc))
			var fe *strictjson.FoldError
			switch {
			case tt.path == "-" && err != nil:
				t.Fatalf("CheckFold(%s) = %v, want nil", tt.doc, err)
			case tt.path != "-" && (!errors.As(err, &fe) || fe.Path != tt.path):
				t.Fatalf("CheckFold(%s) = %v, want a FoldError at %q", tt.doc, err, tt.path)
			}
		})
	}
}

type sub struct {
	K string `json:"k"`
}

type doc struct {
	X   string  `json:"x"`
	N   *int64  `json:"n,omitempty"`
	B   bool    `json:"b"`
	I   int     `json:"i"`
	Sub sub     `json:"sub"`
	P   *sub    `json:"p,omitempty"`
	Any any     `json:"any"`
	Raw string  `json:"-"`
	Ptr *string `json:"ptr"`
}

func TestDecode(t *testing.T) {
	n := int64(-7)
	s := "s"
	tests := []struct {
		name, doc string
		unknown   strictjson.Unknown
		want      doc
		err       string
	}{
		{name: "exact", doc: `{"x":"a","n":-7,"b":true,"i":3,"sub":{"k":"v"},"p":{"k":"w"},"any":[1],"ptr":"s","other":1}`,
			want: doc{X: "a", N: &n, B: true, I: 3, Sub: sub{K: "v"}, P: &sub{K: "w"}, Any: []any{json.Number("1")}, Ptr: &s}},
		{name: "null leaves the field", doc: `{"x":null,"n":null}`},
		{name: "another case", doc: `{"X":"a"}`, err: `member "X" is not "x"`},
		{name: "both cases", doc: `{"x":"a","X":"b"}`, err: "is not"},
		{name: "nested case", doc: `{"sub":{"K":"v"}}`, err: `member "sub.K" is not "k"`},
		{name: "kelvin", doc: `{"sub":{"\u212a":"v"}}`, err: "is not"},
		{name: "unknown refused", doc: `{"x":"a","y":1}`, unknown: strictjson.DisallowUnknown, err: "y is not a known member"},
		{name: "dash field is no member", doc: `{"Raw":"a"}`, unknown: strictjson.DisallowUnknown, err: "not a known member"},
		{name: "string type", doc: `{"x":1}`, err: "x must be a string"},
		{name: "fraction", doc: `{"i":1.5}`, err: "i must be an integer"},
		{name: "exponent", doc: `{"i":1e2}`, err: "i must be an integer"},
		{name: "too large", doc: `{"i":99999999999999999999}`, err: "i must be an integer"},
		{name: "object type", doc: `{"sub":"v"}`, err: "sub must be an object"},
		{name: "bool type", doc: `{"b":"true"}`, err: "b must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got doc
			err := strictjson.Decode(parse(t, tt.doc).(map[string]any), &got, tt.unknown)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Decode(%s) = %v, want an error containing %q", tt.doc, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode(%s) = %+v, %v; want %+v", tt.doc, got, err, tt.want)
			}
		})
	}
	if err := strictjson.Decode(map[string]any{}, doc{}, strictjson.IgnoreUnknown); err == nil {
		t.Fatal("Decode into a struct value = nil, want an error")
	}
}

// FuzzDecode: whatever receipts.Parse accepts, CheckFold and Decode do not
// crash; and a document both accept decodes as encoding/json decodes it
// (so a verifier that decodes once with Decode sees what any decoder sees).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"x":"a","n":1,"sub":{"k":"v"}}`, `{"x":"a","X":"b"}`, `{"X":"a"}`, `{"sub":{"\u212a":1}}`,
		`{"p":{"k":"w"},"any":{"A":1,"a":2}}`, `{"i":1.0}`, `{"ptr":null}`, `[{"x":1}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := receipts.Parse(data)
		if err != nil {
			return
		}
		foldErr := strictjson.CheckFold(v)
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		var got doc
		if err := strictjson.Decode(obj, &got, strictjson.IgnoreUnknown); err != nil || foldErr != nil {
			return
		}
		var want doc
		if err := json.Unmarshal(data, &want); err != nil {
			return // a type encoding/json refuses where Decode is laxer (any)
		}
		got.Any, want.Any = nil, nil // json.Unmarshal gives float64, Decode json.Number
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%s) = %+v, encoding/json %+v", data, got, want)
		}
	})
}
