package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The arguments of an MCP tool call that name files or URLs become the same
// Read, Write and WebFetch requests the agents' own tools make, so that the
// file and network rules hold for MCP servers too: a filesystem server's
// read_text_file {"path": ".env"} meets secrets-by-name exactly as Read
// .env does. docs/mcp.md ("Files and URLs in arguments") explains the choices.

// argRole is what an argument's name (or its schema) says its value is.
type argRole uint8

const (
	roleValue    argRole = iota // unknown: a value is a path or URL only if it looks like one
	rolePayload                 // text the server does not resolve (content, query, pattern): never a path
	roleURL                     // a URL (url, uri, href); a file: URI is a path
	roleWeakPath                // often a path (to, from, input, target): a value that cannot be one is skipped
	rolePath                    // a file or directory (path, file_path, paths, destination, cwd)
)

// argDir is the direction of a path argument.
type argDir uint8

const (
	dirNone argDir = iota
	dirSrc         // read from (source, from, input, old_path)
	dirDst         // written to (destination, target, output, new_path)
)

// argKey is what the gate makes of one argument name.
type argKey struct {
	name  string
	role  argRole
	dir   argDir
	scope bool // a directory the tool works in: relative sibling paths resolve under it too
}

// Bounds of the argument walk.
const (
	maxArgDepth    = 64 // nesting of the arguments (deeper denies)
	maxArgScopes   = 4  // directories a relative path is also resolved under
	maxSchemaNodes = 1 << 14
)

// normArgName folds an argument name for matching: lower case, only letters
// and digits ("filePath", "file_path" and "FILE-PATH" are "filepath").
func normArgName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}

// wordSet returns the set of words, built on its first use: the process
// of a hook that reads no MCP arguments does not build the sets at start.
func wordSet(words string) func() map[string]bool {
	return sync.OnceValue(func() map[string]bool {
		m := make(map[string]bool)
		for _, w := range strings.Fields(words) {
			m[w] = true
		}
		return m
	})
}

var (
	// Names (folded) of arguments that are paths.
	pathArgNames = wordSet(`path paths pathname pathnames pathspec pathspecs file files filename filenames
		filepath filepaths fname fpath dir dirs directory directories folder folders root roots cwd
		workdir workingdir workingdirectory workspace workspacefolder src dest dst destination
		destinations notebook`)
	// Names of arguments that are often, not always, paths.
	weakPathArgNames = wordSet(`to from input inputs output outputs out target targets source sources
		location`)
	// Suffixes of path argument names (oldpath, configfile, outputdir).
	pathArgSuffixes = []string{"path", "paths", "file", "files", "filename", "filenames", "dir", "dirs",
		"directory", "directories", "folder", "folders"}
	// Names with such a suffix that are not paths.
	notPathArgNames = wordSet(`xpath jsonpath jpath keypath jmespath fieldpath propertypath objectpath
		urlpath apipath httppath routepath classpath profile profiles`)
	// Directories a tool works in.
	scopeArgNames = wordSet(`cwd workdir workingdir workingdirectory dir directory folder root rootdir
		rootpath basedir basepath base repopath repodir repositorypath repositorydir workspace
		workspacedir workspacepath workspacefolder workspaceroot projectdir projectpath projectroot
		parentdir parentpath`)
	urlArgNames     = wordSet(`url urls uri uris href link links endpoint endpoints website`)
	urlArgSuffixes  = []string{"url", "urls", "uri", "uris", "href"}
	payloadArgNames = wordSet(`content contents text body message messages description desc title summary
		comment comments note notes query q search searchterm term terms keyword keywords pattern patterns
		regex regexp glob globs include exclude prompt instructions instruction code script sql html
		markdown json yaml xml diff patch snippet replacement oldstr newstr ext extension extensions suffix
		format type mimetype encoding language lang`)
	payloadArgSuffixes = []string{"text", "content", "contents", "body", "message", "query", "pattern",
		"patterns", "regex", "prompt", "description", "title", "comment", "code", "script", "snippet",
		"html", "markdown", "sql", "string"}
	srcArgPrefixes = []string{"source", "src", "from", "old", "input", "orig"}
	dstArgPrefixes = []string{"dest", "dst", "target", "output", "save", "new"}
	dstArgNames    = wordSet(`to topath out outfile outdir outpath`)
)

func hasAnySuffix(s string, sufs []string) bool {
	return slices.ContainsFunc(sufs, func(x string) bool { return strings.HasSuffix(s, x) })
}

func hasAnyPrefix(s string, pres []string) bool {
	return slices.ContainsFunc(pres, func(x string) bool { return strings.HasPrefix(s, x) })
}

// argKeyOf classifies an argument name, with the role the tool's schema
// gives it (roleValue when it gives none).
func argKeyOf(name string, schema map[string]argRole) argKey {
	n := normArgName(name)
	k := argKey{name: name}
	switch {
	case pathArgNames()[n]:
		k.role = rolePath
	case urlArgNames()[n]:
		k.role = roleURL
	case payloadArgNames()[n]:
		k.role = rolePayload
	case hasAnySuffix(n, pathArgSuffixes) && !notPathArgNames()[n]:
		k.role = rolePath
	case hasAnySuffix(n, urlArgSuffixes):
		k.role = roleURL
	case hasAnySuffix(n, payloadArgSuffixes):
		k.role = rolePayload
	case weakPathArgNames()[n]:
		k.role = roleWeakPath
	}
	// The schema can only make an argument more of a path, never less.
	if r := schema[n]; r > k.role {
		k.role = r
	}
	k.scope = scopeArgNames()[n] || hasAnySuffix(n, []string{"dir", "directory", "folder"}) && k.role == rolePath
	switch {
	case dstArgNames()[n] || hasAnyPrefix(n, dstArgPrefixes):
		k.dir = dirDst
	case hasAnyPrefix(n, srcArgPrefixes):
		k.dir = dirSrc
	}
	return k
}

// mcpVerb is what a tool's name says it does to the files it is given.
type mcpVerb struct {
	read        bool // a read verb and no other verb: paths are read
	move        bool // moves or renames: its sources are written too
	destructive bool // deletes, moves or replaces what it is given, the project root included
}

var (
	readVerbs = wordSet(`read get list ls search find grep glob view show cat head tail stat info describe
		inspect lookup fetch query peek preview tree count exists check validate verify diff status log logs
		blame browse explore scan analyze analyse summarize retrieve load print open watch resolve compare`)
	writeVerbs = wordSet(`write edit create update upsert delete del remove rm rmdir mkdir move mv rename copy
		cp duplicate put set save store upload download append insert replace patch modify change apply
		commit push add install uninstall exec execute run format fix touch chmod chown truncate overwrite
		clear clean wipe purge erase destroy drop reset restore init import export extract unzip zip unpack
		pack compress decompress archive generate convert render build compile post send new make link
		symlink checkout merge rebase stash tag sync mount unmount trash unlink emit dump record take
		capture screenshot snapshot backup clone`)
	moveVerbs        = wordSet(`move mv rename`)
	destructiveVerbs = wordSet(`delete del remove rm rmdir unlink move mv rename overwrite truncate wipe purge
		erase destroy trash`)
)

// nameWords splits a tool name into lower-case words: "read_text_file",
// "readTextFile" and "read-text-file" are read, text, file.
func nameWords(s string) []string {
	var out []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			if i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' {
				flush()
			}
			cur = append(cur, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			cur = append(cur, c)
		default:
			flush()
		}
	}
	flush()
	return out
}

// mcpVerbOf reads a tool name. A tool is a reader only when a read verb
// and no write verb appears in its name; any other tool, a verb the gate
// does not know included, writes what its path arguments name.
func mcpVerbOf(method string) mcpVerb {
	var v mcpVerb
	reads, writes := false, false
	for _, w := range nameWords(method) {
		reads = reads || readVerbs()[w]
		writes = writes || writeVerbs()[w]
		v.move = v.move || moveVerbs()[w]
		v.destructive = v.destructive || destructiveVerbs()[w]
	}
	v.read = reads && !writes
	return v
}

// schemaRoles reads a tool's inputSchema for properties whose format says
// they are URLs ("uri", "uri-reference", "iri", "url") or paths ("path",
// "file-path", "directory"), under any name and at any depth. Descriptions
// are not read: they are prose a server writes for the model. A schema
// that is not JSON gives nothing; the argument names and values still count.
func schemaRoles(raw json.RawMessage) map[string]argRole {
	// Most schemas name no format at all: then there is nothing to parse
	// (a member name spelt with \u escapes is parsed).
	if !bytes.Contains(raw, []byte(`"format"`)) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	roles := make(map[string]argRole)
	nodes := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		nodes++
		if depth > maxArgDepth || nodes > maxSchemaNodes {
			return
		}
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e, depth+1)
			}
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for name, sub := range props {
					if r := formatRole(sub, 0); r > roles[normArgName(name)] {
						roles[normArgName(name)] = r
					}
				}
			}
			for _, sub := range v {
				walk(sub, depth+1)
			}
		}
	}
	walk(v, 0)
	return roles
}

// formatRole is the role a property schema's format gives, looking into
// items and anyOf/oneOf/allOf alternatives.
func formatRole(v any, depth int) argRole {
	m, ok := v.(map[string]any)
	if !ok || depth > 4 {
		return roleValue
	}
	r := roleValue
	if f, ok := m["format"].(string); ok {
		switch strings.ToLower(f) {
		case "uri", "uri-reference", "iri", "iri-reference", "url", "uri-template":
			r = roleURL
		case "path", "file-path", "filepath", "file", "directory", "dir", "dir-path", "directory-path":
			r = rolePath
		}
	}
	for _, k := range []string{"items", "anyOf", "oneOf", "allOf"} {
		subs, ok := m[k].([]any)
		if !ok {
			subs = []any{m[k]}
		}
		for _, s := range subs {
			r = max(r, formatRole(s, depth+1))
		}
	}
	return r
}

// argRef is one request an argument asks for: Read or Write of a clean
// absolute path, or WebFetch of a URL.
type argRef struct {
	action string // "Read", "Write" or "WebFetch"
	target string
	arg    string // the argument's name, for messages
}

// argWalker collects the requests of one call's arguments.
type argWalker struct {
	x      *callEnv
	verb   mcpVerb
	schema map[string]argRole
	refs   []argRef
	seen   map[[2]string]bool
}

// mcpArgRefs returns the Read, Write and WebFetch requests the arguments
// of MCP tool method ask for, in argument-name order.
func (x *callEnv) mcpArgRefs(method string, args any, schema json.RawMessage) ([]argRef, error) {
	w := &argWalker{x: x, verb: mcpVerbOf(method), schema: schemaRoles(schema), seen: make(map[[2]string]bool)}
	if err := w.walk(args, argKey{}, nil, 0); err != nil {
		return nil, err
	}
	return w.refs, nil
}

func (w *argWalker) walk(v any, k argKey, scopes []string, depth int) error {
	if depth > maxArgDepth {
		return badInput("arguments nested deeper than %d levels", maxArgDepth)
	}
	switch v := v.(type) {
	case string:
		return w.value(v, k, scopes)
	case []any:
		for _, e := range v {
			if err := w.walk(e, k, scopes, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		keys := make([]argKey, len(names))
		own := scopes
		for i, name := range names {
			keys[i] = argKeyOf(name, w.schema)
			if keys[i].dir == dirNone {
				keys[i].dir = k.dir // {"source": {"path": …}}
			}
			if s, ok := v[name].(string); ok && keys[i].scope && len(own) < maxArgScopes {
				if d, ok := w.scopeDir(s); ok {
					own = append(slices.Clip(own), d)
				}
			}
		}
		for i, name := range names {
			under := own
			if keys[i].scope {
				under = scopes // a directory is not resolved under itself
			}
			if err := w.walk(v[name], keys[i], under, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// scopeDir is the directory a scope argument names, if it names one.
func (w *argWalker) scopeDir(s string) (string, bool) {
	if p, ok := fileURLPath(s); ok {
		s = p
	} else if uriScheme(s) != "" {
		return "", false
	}
	if !plausiblePath(s) {
		return "", false
	}
	abs, err := w.x.absPath(s)
	return abs, err == nil
}

// fetchSchemes are URL schemes other than http(s) that fetch something
// over the network; the gate cannot apply its domain rules to them.
var fetchSchemes = wordSet(`ftp ftps sftp gopher ws wss dict tftp ldap ldaps smb smbs telnet rtsp`)

func (w *argWalker) value(s string, k argKey, scopes []string) error {
	if s == "" || k.role == rolePayload {
		return nil
	}
	if p, ok := fileURLPath(s); ok {
		return w.path(p, k, nil, true)
	}
	if k.role == roleURL && len(s) > 5 && strings.EqualFold(s[:5], "file:") {
		return &urlError{fmt.Sprintf("argument %q: file URL that is not absolute, or not on this host", k.name)}
	}
	switch scheme := uriScheme(s); {
	case scheme == "http" || scheme == "https":
		if k.role == roleValue && strings.ContainsAny(s, " \t\r\n") {
			return nil // prose that starts with a URL
		}
		return w.add("WebFetch", s, k.name)
	case fetchSchemes()[scheme]:
		return &urlError{fmt.Sprintf("argument %q: url scheme %q is not http or https", k.name, scheme)}
	case scheme != "":
		return nil // s3://, git+ssh://, note://: not a local file, not a web fetch
	}
	switch k.role {
	case rolePath:
		return w.path(s, k, scopes, true)
	case roleWeakPath:
		if plausiblePath(s) {
			return w.path(s, k, scopes, false)
		}
	default:
		if looksLikePath(s) {
			return w.path(s, k, scopes, false)
		}
	}
	return nil
}

// path adds the requests for a path argument: relative paths resolve
// against the working directory and, as well, under each directory the
// enclosing arguments name (cwd, root, directory).
func (w *argWalker) path(s string, k argKey, scopes []string, strict bool) error {
	cands := []string{s}
	if !filepath.IsAbs(s) && s != "~" && !strings.HasPrefix(s, "~/") {
		for _, d := range scopes {
			cands = append(cands, filepath.Join(d, s))
		}
	}
	for _, c := range cands {
		abs, err := w.x.absPath(c)
		if err != nil {
			if strict {
				return badInput("argument %q: %v", k.name, err)
			}
			continue
		}
		var actions []string
		switch {
		case k.dir == dirDst:
			actions = []string{"Write"}
		case k.dir == dirSrc && (w.verb.move || w.verb.destructive):
			actions = []string{"Read", "Write"}
		case k.dir == dirSrc || w.verb.read:
			actions = []string{"Read"}
		default:
			actions = []string{"Write"}
		}
		for _, a := range actions {
			target := abs
			if a == "Write" && !w.verb.destructive && w.isProject(abs) {
				// A tool that writes in a directory (git_add ".", git_commit
				// with repo_path) does not replace the project itself:
				// the request is for a file in it.
				target = filepath.Join(abs, "*")
			}
			if err := w.add(a, target, k.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// isProject reports whether abs is the project root, or a symlink to it.
func (w *argWalker) isProject(abs string) bool {
	x := w.x
	if x.project == "" {
		return false
	}
	return abs == x.project || x.links.real(abs, 0) == x.links.real(x.project, 0)
}

func (w *argWalker) add(action, target, arg string) error {
	key := [2]string{action, target}
	if w.seen[key] {
		return nil
	}
	if len(w.refs) >= maxRequests {
		return badInput("arguments name more than %d files and URLs", maxRequests)
	}
	w.seen[key] = true
	w.refs = append(w.refs, argRef{action: action, target: target, arg: arg})
	return nil
}

// uriScheme returns the lower-case scheme of s when s is "scheme://…"
// (RFC 3986 scheme syntax, two characters or more so that "C:/" is not
// one), and "" otherwise.
func uriScheme(s string) string {
	i := strings.Index(s, "://")
	if i < 2 {
		return ""
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return ""
		}
	}
	return strings.ToLower(s[:i])
}

// fileURLPath returns the local path of an absolute file URL
// ("file:///p", "file://localhost/p", "file:/p"), percent-decoded.
func fileURLPath(s string) (string, bool) {
	if len(s) < 6 || !strings.EqualFold(s[:5], "file:") {
		return "", false
	}
	u, err := url.Parse("file:" + s[5:])
	if err != nil || u.Opaque != "" || u.User != nil {
		return "", false
	}
	if h := strings.ToLower(u.Host); h != "" && h != "localhost" {
		return "", false
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return u.Path, true
}

// plausiblePath reports whether s could be a path at all.
func plausiblePath(s string) bool {
	return s != "" && len(s) <= maxPathLen && !strings.ContainsAny(s, "\x00\n\r") &&
		(!strings.HasPrefix(s, "~") || s == "~" || strings.HasPrefix(s, "~/"))
}

// looksLikePath reports whether a value of an argument whose name says
// nothing is a path anyway: absolute, "~/…", "./…", "../…", a hidden name
// (".env", ".ssh/id_rsa"), a relative path ("certs/server.pem",
// "src/../../x") or a file name with an extension ("prod.key",
// "credentials.json"). Prose ("hello world"), words ("todo", "main") and
// "/" alone are not. A word taken for a path is a file in the project,
// which the default policy lets a tool read and write unless its name is a
// secret's: the cost of a false match is small.
func looksLikePath(s string) bool {
	if !plausiblePath(s) || strings.ContainsRune(s, '\t') {
		return false
	}
	switch {
	case s == "~", strings.HasPrefix(s, "~/"), strings.HasPrefix(s, "./"), strings.HasPrefix(s, "../"):
		return true
	case strings.HasPrefix(s, "/"):
		return strings.Trim(s, "/") != ""
	case strings.ContainsRune(s, ' '):
		return false
	case strings.ContainsRune(s, '/'):
		return strings.Trim(s, "/") != ""
	}
	if len(s) > 1 && s[0] == '.' && (isASCIILetter(s[1]) || s[1] == '_') {
		return true // a hidden name
	}
	ext := filepath.Ext(s)
	if len(ext) < 2 || len(ext) > 10 || len(ext) == len(s) {
		return false
	}
	for i := 1; i < len(ext); i++ {
		if c := ext[i]; !isASCIILetter(c) && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isASCIILetter(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
