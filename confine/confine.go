// Package confine derives, from the Cedar policy's file rules, the
// confinement a command runs under — what it may read, what it may write,
// what it may never read even inside the project — and applies it with the
// kernel: Landlock and a private mount namespace on Linux, a Seatbelt
// profile on macOS (docs/hook.md, issue 23).
//
// The kernel enforces what the policy forbids outright (forbid policies
// without @on_deny("ask")): reading and writing secrets, writing outside
// the project. What the policy asks about, network destinations and a
// command's intent stay with the analyser (package policy).
package confine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/policy"
)

// Construction names the confinement's canonical form; it is part of the
// digest.
const Construction = "docket-confinement-v1"

// Confinement is the set of file rules a confined command runs under. Its
// canonical form is the JCS of its JSON; [Confinement.Digest] hashes it.
// Paths are absolute and clean; names and relative patterns are lowercase
// globs where only * is special (Cedar's like).
type Confinement struct {
	Construction string `json:"construction"`
	Project      string `json:"project"`
	Home         string `json:"home"`
	// Read are the trees a command may read (the secrets below excepted).
	Read []string `json:"read"`
	// Write are the trees the policy lets a command write (the project).
	Write []string `json:"write"`
	// ToolWrite are the temporary directories and tool caches everyday
	// tools write (Go's build and module caches, npm's cache, …): not
	// from the policy, which forbids writing outside the project, but
	// printed and covered by the digest.
	ToolWrite []string `json:"tool_write"`
	// DenyPaths are files and trees never read nor written (~/.ssh).
	DenyPaths []string `json:"deny_paths"`
	// DenyNames are base names never read nor written in the project and
	// in the home directory's top level (.env*, *.pem).
	DenyNames []string `json:"deny_names"`
	// AllowNames are exceptions to DenyNames (.env.example).
	AllowNames []string `json:"allow_names"`
	// DenyRel are project-relative paths never read (.docket/*key*).
	DenyRel []string `json:"deny_rel"`
	// ReadOnly are project-relative trees that may be read, not written
	// (.docket, .claude, .git/hooks).
	ReadOnly []string `json:"read_only"`
}

// Env is where a confinement is derived for: the project, the home
// directory and the tool directories granted for writing.
type Env struct {
	Project   string
	Home      string
	ToolWrite []string
}

// DefaultEnv returns the Env of project for the current user: HOME, the
// temporary directories and the caches of the everyday toolchains (taken
// from their environment variables where set).
func DefaultEnv(project string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("home directory: %w", err)
	}
	env := Env{Project: project, Home: home}
	tw := []string{"/tmp", "/var/tmp", "/dev/shm", os.TempDir()}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "npm_config_cache", "XDG_CACHE_HOME", "CARGO_HOME", "PIP_CACHE_DIR"} {
		if p := os.Getenv(v); filepath.IsAbs(p) {
			tw = append(tw, p)
		}
	}
	if gp := os.Getenv("GOPATH"); filepath.IsAbs(gp) {
		tw = append(tw, filepath.Join(gp, "pkg", "mod"))
	}
	for _, rel := range toolCaches {
		tw = append(tw, filepath.Join(home, rel))
	}
	env.ToolWrite = tw
	return env, nil
}

// toolWrite returns env's tool directories a confinement for project
// grants, clean and sorted: the absolute ones outside the project.
func toolWrite(env Env, project string) []string {
	var tw []string
	for _, t := range env.ToolWrite {
		if filepath.IsAbs(t) && !within(t, project) {
			tw = append(tw, filepath.Clean(t))
		}
	}
	return uniq(tw)
}

// toolCaches are the caches under $HOME that everyday tools write.
var toolCaches = []string{
	".cache",                       // go-build, pip, yarn, node-gyp, …
	"go/pkg/mod",                   // Go modules
	".npm", ".yarn", ".pnpm-store", // JavaScript package managers
	".local/share/pnpm",             // pnpm's store
	".cargo/registry", ".cargo/git", // Rust
	".m2/repository", ".gradle/caches", // Java
	".rustup/tmp", ".bun/install/cache", ".deno", // others
}

// Secret locations and names the policy is asked about besides the ones
// its text names. A candidate enters the confinement only when the policy
// forbids it.
var (
	candidatePaths = []string{"~/.ssh", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker",
		"~/.gnupg", "~/.password-store", "~/.config/gh", "~/.terraform.d", "/etc/shadow", "/etc/sudoers",
		"/etc/gshadow", "~/.netrc", "~/.pgpass", "~/.npmrc", "~/.pypirc", "~/.git-credentials"}
	candidateNames = []string{".env*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_ed25519*", "id_ecdsa*",
		"id_dsa*", ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", "credentials.json"}
	candidateExceptions = []string{".env.example", ".env.sample", ".env.template"}
	candidateReadOnly   = []string{".docket", ".claude", ".git/hooks", ".git/config", ".gemini", ".codex", ".vscode", ".husky"}
	candidateDenyRel    = []string{".docket/*key*"}
)

// literalREs are the policy literals the derivation also asks about:
// every entity id of type Directory or File, every like pattern and every
// quoted string. They are compiled on the first derivation, not when a
// docket process starts (the hook, docket exec and its confined stage
// only read a derived confinement; the last pattern alone compiles to
// some 60 KB).
var literalREs = sync.OnceValue(func() [3]*regexp.Regexp {
	return [3]*regexp.Regexp{
		regexp.MustCompile(`(?:Directory|File)\s*::\s*"([^"\\]+)"`),
		regexp.MustCompile(`like\s+"([^"\\]+)"`),
		regexp.MustCompile(`"([^"\\\s]{1,128})"`),
	}
})

// Derive asks the policy which of the candidate paths, names and
// project-relative trees it forbids reading or writing, and returns the
// confinement that forbids the same. Only forbids without @on_deny("ask")
// count: the kernel cannot ask.
func Derive(ctx context.Context, eng *policy.Engine, env Env) (*Confinement, error) {
	if eng == nil {
		return nil, errors.New("confinement: no policy")
	}
	if !filepath.IsAbs(env.Project) || !filepath.IsAbs(env.Home) {
		return nil, fmt.Errorf("confinement: project %q and home %q must be absolute", env.Project, env.Home)
	}
	p := &prober{ctx: ctx, eng: eng, env: env}
	c := &Confinement{Construction: Construction, Project: filepath.Clean(env.Project), Home: filepath.Clean(env.Home), Read: []string{"/"}}
	if p.allowed("Write", filepath.Join(c.Project, "docket-probe")) {
		c.Write = []string{c.Project}
	}
	c.ToolWrite = toolWrite(env, c.Project)

	var text strings.Builder
	for _, f := range eng.Files() {
		text.Write(f.Data)
		text.WriteByte('\n')
	}
	src := text.String()

	res := literalREs()
	entityLiteralRE, likeLiteralRE, stringLiteralRE := res[0], res[1], res[2]
	paths := append([]string(nil), candidatePaths...)
	for _, m := range entityLiteralRE.FindAllStringSubmatch(src, -1) {
		paths = append(paths, m[1])
	}
	for _, cand := range paths {
		abs := expandHome(cand, c.Home)
		if !filepath.IsAbs(abs) || abs == "/" || within(c.Project, abs) {
			continue
		}
		if p.denied("Read", abs) {
			c.DenyPaths = append(c.DenyPaths, abs)
		}
	}

	var likes, strs []string
	for _, m := range likeLiteralRE.FindAllStringSubmatch(src, -1) {
		likes = append(likes, strings.ToLower(m[1]))
	}
	for _, m := range stringLiteralRE.FindAllStringSubmatch(src, -1) {
		strs = append(strs, m[1])
	}
	names := append(append(append([]string(nil), candidateNames...), likes...), strs...)
	probeDir := filepath.Join(c.Project, "docket-probe")
	for _, n := range names {
		n = strings.ToLower(n)
		if n == "" || n == "*" || strings.Contains(n, "/") || n == "." || n == ".." || strings.Trim(n, "*") == "" {
			continue
		}
		if p.denied("Read", filepath.Join(probeDir, example(n))) {
			c.DenyNames = append(c.DenyNames, n)
		}
	}
	c.DenyNames = uniq(c.DenyNames)
	for _, n := range append(append([]string(nil), candidateExceptions...), strs...) {
		if strings.Contains(n, "/") || !matchAny(c.DenyNames, strings.ToLower(n)) {
			continue
		}
		if p.allowed("Read", filepath.Join(probeDir, n)) {
			c.AllowNames = append(c.AllowNames, n)
		}
	}

	rels := append([]string(nil), candidateDenyRel...)
	for _, l := range likes {
		if strings.Contains(l, "/") && !strings.HasPrefix(l, "/") && !strings.HasPrefix(l, "~") {
			rels = append(rels, l)
		}
	}
	for _, r := range rels {
		if strings.Contains(r, "..") || strings.HasPrefix(r, "*") {
			continue
		}
		if p.denied("Read", filepath.Join(c.Project, example(r))) && !matchAny(c.DenyNames, strings.ToLower(filepath.Base(example(r)))) {
			c.DenyRel = append(c.DenyRel, r)
		}
	}

	ro := append([]string(nil), candidateReadOnly...)
	for _, s := range strs {
		if strings.HasPrefix(s, ".") && s != "." && s != ".." && !strings.Contains(s, "*") && !strings.Contains(s, "..") {
			ro = append(ro, s)
		}
	}
	for _, l := range likes {
		if strings.HasSuffix(l, "/*") && !strings.ContainsAny(strings.TrimSuffix(l, "/*"), "*~") && !strings.HasPrefix(l, "/") {
			ro = append(ro, strings.TrimSuffix(l, "/*"))
		}
	}
	for _, r := range ro {
		r = filepath.Clean(r)
		abs := filepath.Join(c.Project, r)
		if !within(abs, c.Project) || abs == c.Project {
			continue
		}
		if len(c.Write) > 0 && p.denied("Write", abs) && !p.denied("Read", abs) {
			c.ReadOnly = append(c.ReadOnly, r)
		}
	}
	if p.err != nil {
		return nil, fmt.Errorf("confinement: %w", p.err)
	}
	c.normalize()
	return c, nil
}

// prober asks the policy about one file operation at a time.
type prober struct {
	ctx context.Context
	eng *policy.Engine
	env Env
	err error
}

func (p *prober) decide(tool, path string) policy.Decision {
	input := map[string]string{"file_path": path}
	if tool == "Write" {
		input["content"] = ""
	}
	raw, _ := json.Marshal(input)
	d := p.eng.Decide(p.ctx, policy.Call{ToolName: tool, ToolInput: raw, Cwd: p.env.Project, ProjectDir: p.env.Project, Home: p.env.Home})
	if d.Reason == policy.ReasonGateError && p.err == nil {
		p.err = fmt.Errorf("asking the policy about %s %s: %s", tool, path, d.Message)
	}
	return d
}

// denied reports whether the policy forbids the operation outright.
func (p *prober) denied(tool, path string) bool {
	d := p.decide(tool, path)
	return d.Decision == policy.Deny && d.Reason == policy.ReasonDeny
}

func (p *prober) allowed(tool, path string) bool {
	return p.decide(tool, path).Decision == policy.Allow
}

// example returns a name that the pattern matches: each * becomes "x".
func example(pattern string) string { return strings.ReplaceAll(pattern, "*", "x") }

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return filepath.Clean(p)
}

// within reports whether p is root or below it.
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

// normalize sorts and deduplicates every list, so equal confinements have
// equal canonical forms.
func (c *Confinement) normalize() {
	for _, l := range []*[]string{&c.Read, &c.Write, &c.ToolWrite, &c.DenyPaths, &c.DenyNames, &c.AllowNames, &c.DenyRel, &c.ReadOnly} {
		*l = uniq(*l)
	}
}

func uniq(xs []string) []string {
	out := make([]string, 0, len(xs))
	sort.Strings(xs)
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Canonical returns the JCS form of c.
func (c *Confinement) Canonical() ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return strictjson.CanonicalizeJSON(raw)
}

// Digest returns "sha256:" + hex SHA-256 of c's canonical form.
func (c *Confinement) Digest() (string, error) {
	b, err := c.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Parse reads a confinement from its JSON form, strictly: unknown members,
// a wrong construction, relative paths or patterns that climb out of the
// project are refused.
func Parse(data []byte) (*Confinement, error) {
	var c Confinement
	if err := strictjson.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("confinement: %w", err)
	}
	if c.Construction != Construction {
		return nil, fmt.Errorf("confinement: construction %q, want %q", c.Construction, Construction)
	}
	for _, l := range [][]string{{c.Project, c.Home}, c.Read, c.Write, c.ToolWrite, c.DenyPaths} {
		for _, p := range l {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return nil, fmt.Errorf("confinement: path %q is not absolute and clean", p)
			}
		}
	}
	for _, l := range [][]string{c.DenyNames, c.AllowNames} {
		for _, n := range l {
			if n == "" || strings.Contains(n, "/") {
				return nil, fmt.Errorf("confinement: name %q is empty or has a slash", n)
			}
		}
	}
	for _, l := range [][]string{c.DenyRel, c.ReadOnly} {
		for _, r := range l {
			if r == "" || filepath.IsAbs(r) || filepath.Clean(r) != r || r == "." || strings.HasPrefix(r, "..") {
				return nil, fmt.Errorf("confinement: relative path %q is not inside the project", r)
			}
		}
	}
	c.normalize()
	return &c, nil
}

// match reports whether name matches the lowercase glob pattern, where
// only * is special (any run of characters), as in Cedar's like.
func match(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if match(p, name) {
			return true
		}
	}
	return false
}

// SecretName reports whether a file of this base name is never readable
// under c.
func (c *Confinement) SecretName(name string) bool {
	n := strings.ToLower(name)
	return matchAny(c.DenyNames, n) && !matchAny(lower(c.AllowNames), n)
}

func lower(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.ToLower(x)
	}
	return out
}
