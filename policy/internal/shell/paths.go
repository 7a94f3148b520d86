package shell

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxGlobMatches bounds the files taken from the expansion of one glob.
const maxGlobMatches = 128

// sensitive are relative paths of files worth protecting. A glob that
// could match one of them (by base name, ignoring case, as on macOS) is
// taken to match it, whether or not it exists: `cat .e*` reads .env,
// `find . -name '*.jsonl' -delete` deletes Docket's chains. The policy
// decides what they are worth; the walker only names them.
var sensitive = []string{
	".env", ".env.local", ".env.production", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials",
	"credentials", "credentials.json", "id_rsa", "id_ed25519", "id_ecdsa", "key.pem", "server.key", "cert.p12",
	".bashrc", ".zshrc", ".profile",
	".docket", ".docket/chain.jsonl", ".docket/issuer.key", ".docket/policy/docket.cedar", ".docket/config.json",
	".claude", ".claude/settings.json", ".claude/settings.local.json",
	".git", ".git/config", ".git/hooks/pre-commit", ".ssh", ".ssh/id_rsa", ".aws", ".aws/credentials",
}

// resolve returns the clean absolute paths a path argument names from
// the directories the command runs in; with every file a glob in it
// matches now, and the sensitive names it could match. deep is for find's
// patterns, which match at any depth and match leading dots.
func (w *walker) resolve(a arg, deep bool) []string {
	if !a.lit {
		return nil
	}
	deep = deep || a.deep
	var bases []string
	switch t := a.text; {
	case t == "~" || strings.HasPrefix(t, "~/"):
		if w.home == "" {
			bases = []string{t}
		} else {
			bases = []string{join(w.home, t[1:])}
		}
	case strings.HasPrefix(t, "/"), strings.HasPrefix(t, "~"):
		bases = []string{join("", t)}
	default:
		for _, d := range w.dirs {
			switch d {
			case unknownDir:
				bases = append(bases, filepath.Clean("/"+t))
			case "":
				bases = append(bases, t)
			default:
				bases = append(bases, join(d, t))
			}
		}
	}
	if !a.glob {
		return bases
	}
	var out []string
	for _, b := range bases {
		out = append(out, b)
		if !deep {
			out = append(out, globMatches(b)...)
		}
		out = appendUniq(out, candidates(b, deep)...)
	}
	return out
}

// join joins a directory and a path and cleans the result, except that a
// path with ".." components is left for the gate to resolve the way the
// kernel does: ".." after a symlink is the parent of the link's target,
// not of the link (link/../x is not x when link points elsewhere).
func join(dir, p string) string {
	if !hasDotDot(p) {
		if dir == "" {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	if dir == "" {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + strings.TrimPrefix(p, "/")
}

// hasDotDot reports a path with a ".." component.
func hasDotDot(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// globMatches expands a glob against the file system as bash does: a
// wildcard does not match a leading dot.
func globMatches(pattern string) []string {
	ms, err := filepath.Glob(pattern)
	if err != nil {
		return nil
	}
	pc := strings.Split(pattern, "/")
	var out []string
	for _, m := range ms {
		mc := strings.Split(m, "/")
		hidden := false
		for i := range min(len(pc), len(mc)) {
			if strings.HasPrefix(mc[i], ".") && !strings.HasPrefix(pc[i], ".") {
				hidden = true
			}
		}
		if !hidden {
			out = append(out, m)
		}
		if len(out) >= maxGlobMatches {
			break
		}
	}
	return out
}

// candidates returns dir/s for each sensitive s the last component of the
// pattern could match: the whole of s when the pattern's directory is
// literal, and at any depth when deep.
func candidates(pattern string, deep bool) []string {
	dir, base := path.Split(pattern)
	if isGlob(dir) {
		return nil
	}
	base = strings.ToLower(base)
	// A pattern that starts with a wildcard ("dist/*", "build/*.json")
	// matches what is there, which globMatches found; naming every
	// secret it could match would refuse `rm -rf dist/*`. One that spells
	// the start of a name (".e*", "cred*", "id_*") names the secrets it
	// could match, existing or not.
	wild := !deep && (base == "" || strings.IndexByte("*?[", base[0]) >= 0)
	if wild {
		return nil
	}
	var out []string
	for _, s := range sensitive {
		name := path.Base(s)
		if !deep && (s != name || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		if ok, _ := path.Match(base, name); ok {
			out = append(out, path.Join(dir, s))
		}
	}
	return out
}

// listedBy returns the files a word that is only $(find …) or
// $(git ls-files PATTERN…) expands to, as the patterns they match (deep
// globs under the start paths), so that `wc -l $(git ls-files '*.go')`
// reads *.go files, not anything.
func (w *walker) listedBy(x *syntax.Word) ([]arg, bool) {
	if len(x.Parts) != 1 {
		return nil, false
	}
	cs, ok := x.Parts[0].(*syntax.CmdSubst)
	if !ok || len(cs.Stmts) != 1 || len(cs.Stmts[0].Redirs) > 0 {
		return nil, false
	}
	c, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, false
	}
	return w.listed(c)
}

// listed returns the files a file-listing command prints, as patterns:
// find's start paths and -name tests (findSelected), git ls-files with
// pathspecs, ls of literal operands. ok is false for anything else.
func (w *walker) listed(c *syntax.CallExpr) ([]arg, bool) {
	if c == nil || len(c.Assigns) > 0 || len(c.Args) == 0 {
		return nil, false
	}
	args := w.words(c.Args)
	for _, a := range args {
		if !a.lit {
			return nil, false
		}
	}
	switch args[0].text {
	case "find":
		for _, a := range args[1:] {
			switch a.text {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls", "-fprint0", "-L", "-follow":
				return nil, false
			}
		}
		return findSelected(args[1:]), true
	case "git":
		if len(args) < 3 || args[1].text != "ls-files" {
			return nil, false
		}
		var out []arg
		for _, a := range args[2:] {
			if strings.HasPrefix(a.text, "-") {
				if a.text != "--" && a.text != "-z" && a.text != "--cached" {
					return nil, false
				}
				continue
			}
			// A pathspec without a slash matches at any depth.
			out = append(out, arg{text: "./" + a.text, lit: true, glob: true, deep: !strings.Contains(a.text, "/")})
		}
		return out, len(out) > 0
	case "ls":
		var out []arg
		for _, a := range args[1:] {
			if strings.HasPrefix(a.text, "-") {
				if strings.ContainsAny(a.text, "RrlaA") && a.text != "-1" {
					return nil, false
				}
				continue
			}
			out = append(out, a)
		}
		return out, len(out) > 0
	}
	return nil, false
}
