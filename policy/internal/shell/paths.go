package shell

import (
	"path"
	"path/filepath"
	"strings"
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
			bases = []string{filepath.Clean(w.home + t[1:])}
		}
	case strings.HasPrefix(t, "/"), strings.HasPrefix(t, "~"):
		bases = []string{filepath.Clean(t)}
	default:
		for _, d := range w.dirs {
			switch d {
			case unknownDir:
				bases = append(bases, filepath.Clean("/"+t))
			case "":
				bases = append(bases, t)
			default:
				bases = append(bases, filepath.Join(d, t))
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
