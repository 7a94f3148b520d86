package confine_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/policy"
)

// derive returns the default policy's confinement for a fresh project and
// home under a temporary directory.
func derive(t *testing.T) (*confine.Confinement, string, string) {
	t.Helper()
	eng, env := defaultEnv(t)
	c, err := confine.Derive(t.Context(), eng, env)
	if err != nil {
		t.Fatalf("Derive = %v", err)
	}
	return c, env.Home, env.Project
}

// defaultEnv returns the default policy and an Env of a fresh project and
// home under a temporary directory.
func defaultEnv(t *testing.T) (*policy.Engine, confine.Env) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	home, project := filepath.Join(root, "home"), filepath.Join(root, "project")
	for _, d := range []string{home, project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := policy.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	return eng, confine.Env{Project: project, Home: home, ToolWrite: []string{filepath.Join(root, "tmp")}}
}

func TestDeriveDefault(t *testing.T) {
	c, home, project := derive(t)
	out, _ := json.MarshalIndent(c, "", "  ")
	t.Logf("%s", out)
	contains := func(name string, xs []string, want string) {
		t.Helper()
		for _, x := range xs {
			if x == want {
				return
			}
		}
		t.Errorf("%s = %q, want it to contain %q", name, xs, want)
	}
	contains("DenyPaths", c.DenyPaths, filepath.Join(home, ".ssh"))
	contains("DenyPaths", c.DenyPaths, filepath.Join(home, ".aws"))
	contains("DenyPaths", c.DenyPaths, "/etc/shadow")
	contains("DenyNames", c.DenyNames, ".env*")
	contains("DenyNames", c.DenyNames, "*.pem")
	contains("DenyNames", c.DenyNames, "id_ed25519*")
	contains("AllowNames", c.AllowNames, ".env.example")
	contains("DenyRel", c.DenyRel, ".docket/*key*")
	contains("ReadOnly", c.ReadOnly, ".docket")
	contains("ReadOnly", c.ReadOnly, ".claude")
	contains("ReadOnly", c.ReadOnly, ".git/hooks")
	contains("Write", c.Write, project)
	for _, n := range c.DenyNames {
		if n == ".git" || n == "." || n == "*" {
			t.Errorf("DenyNames contains %q", n)
		}
	}
	for _, r := range c.ReadOnly {
		if r == ".git" || r == "." {
			t.Errorf("ReadOnly contains %q: git would not work", r)
		}
	}
	d1, err := c.Digest()
	if err != nil {
		t.Fatal(err)
	}
	canon, _ := c.Canonical()
	back, err := confine.Parse(canon)
	if err != nil {
		t.Fatalf("Parse(Canonical()) = %v", err)
	}
	d2, _ := back.Digest()
	canon2, _ := back.Canonical()
	if d1 != d2 || !bytes.Equal(canon, canon2) {
		t.Errorf("Digest after Parse = %s, want %s", d2, d1)
	}
}
