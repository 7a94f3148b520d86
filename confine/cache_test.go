package confine_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/confine"
)

// TestCached checks that the cache hands back the derived confinement
// byte for byte while its entry is untouched, and derives it again when
// the entry was changed: a weaker one planted under the same name, one
// for another project or tool directories, one not in canonical form, one
// that does not parse.
func TestCached(t *testing.T) {
	eng, env := defaultEnv(t)
	root, home := filepath.Dir(env.Project), env.Home
	dir := filepath.Join(env.Project, ".docket", confine.CacheDir)
	want, file, err := confine.Cached(t.Context(), eng, env, dir)
	if err != nil {
		t.Fatalf("Cached = %v", err)
	}
	wantDigest, _ := want.Digest()
	wantBytes, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if canon, _ := want.Canonical(); !bytes.Equal(canon, wantBytes) {
		t.Fatalf("cache file = %s, want %s", wantBytes, canon)
	}

	alter := func(f func(c *confine.Confinement)) []byte {
		c, err := confine.Parse(wantBytes)
		if err != nil {
			t.Fatal(err)
		}
		f(c)
		b, err := c.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{name: "untouched", data: wantBytes},
		{name: "another project", data: alter(func(c *confine.Confinement) { c.Project = root; c.Write = []string{root} })},
		{name: "another home", data: alter(func(c *confine.Confinement) { c.Home = "/" })},
		{name: "tool directory added", data: alter(func(c *confine.Confinement) { c.ToolWrite = append(c.ToolWrite, home) })},
		{name: "not canonical", data: append(append([]byte(nil), wantBytes...), '\n')},
		{name: "not json", data: []byte("{")},
		{name: "another construction", data: []byte(strings.Replace(string(wantBytes), confine.Construction, "docket-confinement-v0", 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(file, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			c, got, err := confine.Cached(t.Context(), eng, env, dir)
			if err != nil {
				t.Fatalf("Cached = %v", err)
			}
			if got != file {
				t.Errorf("Cached file = %s, want %s", got, file)
			}
			if d, _ := c.Digest(); d != wantDigest {
				t.Errorf("Cached digest = %s, want %s", d, wantDigest)
			}
			if b, _ := os.ReadFile(file); !bytes.Equal(b, wantBytes) {
				t.Errorf("cache file after Cached = %s, want %s", b, wantBytes)
			}
		})
	}
}
