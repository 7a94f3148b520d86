package confine_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/docketlog/docket/confine"
)

func TestSecretName(t *testing.T) {
	c := &confine.Confinement{DenyNames: []string{".env*", "*.pem", "id_rsa*", "credentials.json", "*.k*y"}, AllowNames: []string{".env.example"}}
	tests := []struct {
		name string
		want bool
	}{
		{".env", true}, {".ENV.local", true}, {".env.example", false}, {".Env.Example", false},
		{"server.pem", true}, {"pem", false}, {"id_rsa.pub", true}, {"credentials.json", true},
		{"credentials.json.bak", false}, {"a.key", true}, {"a.kxy", true}, {"a.k", false}, {"README.md", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.SecretName(tt.name); got != tt.want {
				t.Errorf("SecretName(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ name, json string }{
		{"wrong construction", `{"construction":"x","project":"/p","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":[],"allow_names":[],"deny_rel":[],"read_only":[]}`},
		{"relative path", `{"construction":"docket-confinement-v1","project":"p","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":[],"allow_names":[],"deny_rel":[],"read_only":[]}`},
		{"unclean path", `{"construction":"docket-confinement-v1","project":"/p/../q","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":[],"allow_names":[],"deny_rel":[],"read_only":[]}`},
		{"read-only climbs out", `{"construction":"docket-confinement-v1","project":"/p","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":[],"allow_names":[],"deny_rel":[],"read_only":["../etc"]}`},
		{"name with slash", `{"construction":"docket-confinement-v1","project":"/p","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":["a/b"],"allow_names":[],"deny_rel":[],"read_only":[]}`},
		{"unknown member", `{"construction":"docket-confinement-v1","project":"/p","home":"/h","read":["/"],"write":[],"tool_write":[],"deny_paths":[],"deny_names":[],"allow_names":[],"deny_rel":[],"read_only":[],"extra":1}`},
		{"not json", `{`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := confine.Parse([]byte(tt.json)); err == nil {
				t.Errorf("Parse(%s) = %+v, want an error", tt.json, c)
			}
		})
	}
}

// FuzzParse: Parse never panics, and what it accepts round-trips through
// its canonical form to the same digest.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"construction":"docket-confinement-v1","project":"/p","home":"/h","read":["/"],"write":["/p"],"tool_write":["/tmp"],"deny_paths":["/h/.ssh"],"deny_names":[".env*"],"allow_names":[".env.example"],"deny_rel":[".docket/*key*"],"read_only":[".docket"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := confine.Parse(data)
		if err != nil {
			return
		}
		b, err := c.Canonical()
		if err != nil {
			t.Fatalf("Canonical() of a parsed confinement: %v", err)
		}
		back, err := confine.Parse(b)
		if err != nil {
			t.Fatalf("Parse(Canonical()) = %v", err)
		}
		b2, _ := back.Canonical()
		if !bytes.Equal(b, b2) {
			t.Fatalf("Canonical() = %s, then %s", b, b2)
		}
	})
}

func TestSeatbeltProfile(t *testing.T) {
	c := &confine.Confinement{Construction: confine.Construction, Project: "/Users/u/p", Home: "/Users/u", Read: []string{"/"},
		Write: []string{"/Users/u/p"}, ToolWrite: []string{"/private/tmp", `/odd "dir"`}, DenyPaths: []string{"/Users/u/.ssh"},
		DenyNames: []string{".env*", "*.pem"}, AllowNames: []string{".env.example"}, DenyRel: []string{".docket/*key*"}, ReadOnly: []string{".docket"}}
	got := c.SeatbeltProfile()
	for _, want := range []string{
		"(version 1)\n(allow default)\n(deny file-write*)\n",
		`(subpath "/Users/u/p")`,
		`(subpath "/odd \"dir\"")`,
		"(deny file-write*\n  (subpath \"/Users/u/p/.docket\")\n)",
		"(deny file-read* file-write*\n  (subpath \"/Users/u/.ssh\")",
		`(regex #"^/Users/u/p/(.*/)?\\.[eE][nN][vV][^/]*(/.*)?$")`,
		`(regex #"^/Users/u/\\.[eE][nN][vV][^/]*(/.*)?$")`,
		`(regex #"^/Users/u/p/(.*/)?[^/]*\\.[pP][eE][mM](/.*)?$")`,
		`(regex #"^/Users/u/p/\\.[dD][oO][cC][kK][eE][tT]/[^/]*[kK][eE][yY][^/]*(/.*)?$")`,
		"(allow file-read*\n  (regex #\"^/Users/u/p/(.*/)?\\\\.[eE][nN][vV]\\\\.[eE][xX][aA][mM][pP][lL][eE]$\")\n)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("SeatbeltProfile() lacks %s\n%s", want, got)
		}
	}
	// The denials come after the write grants: later rules win in SBPL.
	if strings.Index(got, "(deny file-read* file-write*") < strings.Index(got, "(allow file-write*") {
		t.Errorf("SeatbeltProfile() denies before it grants:\n%s", got)
	}
}
