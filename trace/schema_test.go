package trace

import (
	"regexp"
	"strings"
	"testing"
)

// digestRE is the trace-v0.2 schema's pattern for digests, which isDigest
// implements without compiling a regular expression when the package
// loads.
var digestRE = regexp.MustCompile(`^sha(256:[0-9a-f]{64}|384:[0-9a-f]{96})$`)

func TestIsDigest(t *testing.T) {
	h64, h96 := strings.Repeat("ab", 32), strings.Repeat("0f", 48)
	tests := []struct {
		name string
		s    string
		want bool
	}{
		{"sha256", "sha256:" + h64, true},
		{"sha384", "sha384:" + h96, true},
		{"empty", "", false},
		{"sha256 short", "sha256:" + h64[1:], false},
		{"sha256 long", "sha256:" + h64 + "0", false},
		{"sha256 with sha384 length", "sha256:" + h96, false},
		{"sha384 with sha256 length", "sha384:" + h64, false},
		{"uppercase hex", "sha256:" + strings.ToUpper(h64), false},
		{"sha512", "sha512:" + h64 + h64, false},
		{"trailing newline", "sha256:" + h64 + "\n", false},
		{"non-hex", "sha256:" + h64[:63] + "g", false},
		{"no algorithm", ":" + h64, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isDigest(tt.s); got != tt.want {
				t.Errorf("isDigest(%q) = %v, want %v", tt.s, got, tt.want)
			}
			if got := digestRE.MatchString(tt.s); got != tt.want {
				t.Errorf("digestRE.MatchString(%q) = %v, want %v", tt.s, got, tt.want)
			}
		})
	}
}

// FuzzIsDigest: isDigest answers as the schema's pattern does.
func FuzzIsDigest(f *testing.F) {
	f.Add("sha256:" + strings.Repeat("a", 64))
	f.Add("sha384:" + strings.Repeat("9", 96))
	f.Add("sha256:" + strings.Repeat("A", 64))
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDigest(s), digestRE.MatchString(s); got != want {
			t.Errorf("isDigest(%q) = %v, want %v", s, got, want)
		}
	})
}
