package policy

import (
	"regexp"
	"slices"
	"testing"
)

// actionLiteralRE is what actionLiterals is written out from.
var actionLiteralRE = regexp.MustCompile(`Action\s*::\s*"([A-Za-z0-9_.:-]+)"`)

func actionLiteralsRE(data []byte) []string {
	var out []string
	for _, m := range actionLiteralRE.FindAllSubmatch(data, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func TestActionLiterals(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{name: "plain", in: `action == Action::"Bash"`, want: []string{"Bash"}},
		{name: "spaces", in: "action in [Action \t::\n\f\r \"mcp__github\", Action::\"Read\"]", want: []string{"mcp__github", "Read"}},
		{name: "vertical tab is not RE2 space", in: "Action\v::\"Bash\"", want: nil},
		{name: "empty name", in: `Action::""`, want: nil},
		{name: "bad byte in name", in: `Action::"a b"`, want: nil},
		{name: "unterminated", in: `Action::"Bash`, want: nil},
		{name: "namespaced", in: `Action::"a::b-c.d_e"`, want: []string{"a::b-c.d_e"}},
		{name: "nested Action", in: `ActionAction::"x" Action::Action::"y"`, want: []string{"x", "y"}},
		{name: "prefix word", in: `MyAction::"z"`, want: []string{"z"}},
		{name: "single colon", in: `Action:"z"`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := actionLiterals([]byte(tt.in))
			if !slices.Equal(got, tt.want) {
				t.Errorf("actionLiterals(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if re := actionLiteralsRE([]byte(tt.in)); !slices.Equal(got, re) {
				t.Errorf("actionLiterals(%q) = %q, the expression finds %q", tt.in, got, re)
			}
		})
	}
}

// FuzzActionLiterals holds actionLiterals equal to the regular expression
// it replaced.
func FuzzActionLiterals(f *testing.F) {
	f.Add([]byte(`permit(principal, action in [Action::"Bash", Action :: "mcp__x"], resource);`))
	f.Add([]byte(Default))
	f.Add([]byte("Action\r\n::\f\"a\"Action::\"b\"\"c\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := actionLiterals(data), actionLiteralsRE(data); !slices.Equal(got, want) {
			t.Errorf("actionLiterals(%q) = %q, want %q", data, got, want)
		}
	})
}
