package shell

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// env.go tracks the environment a command runs with, the way cd is
// tracked: a prefix assignment (X=1 cmd), env X=1 cmd, and variables the
// line exports before it (export, declare -x, typeset -x, set -a followed
// by assignments, a file sourced with . or source). Each command's Env
// names every variable set for it that way; the policy asks about any it
// does not list as harmless. A few variables are judged by their value
// (PAGER=cat, GOFLAGS=-mod=mod): with a harmless value they are left out.
// Variables whose value is a directory the program writes (GOCACHE,
// TMPDIR, …) add that directory to the command's writes.

// envVar is one assignment: its name and, when it has one, its value.
type envVar struct {
	name   string
	val    arg
	hasVal bool
}

// shellSpecial are variables that change what the shell itself does
// (globbing, tracing, prompts, startup files), set or not exported.
var shellSpecial = map[string]bool{
	"GLOBIGNORE": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true,
	"IFS": true, "BASH_ENV": true, "ENV": true, "HISTFILE": true, "BASH_XTRACEFD": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PATH": true, "HOME": true, "EXECIGNORE": true, "FIGNORE": true,
	"BASH_COMPAT": true, "BASH_LOADABLES_PATH": true, "MAILPATH": true, "HISTIGNORE": true, "CDPATH": true,
}

// pathVars are variables naming a directory the program writes into.
var pathVars = map[string]bool{
	"GOCACHE": true, "GOTMPDIR": true, "GOMODCACHE": true, "GOBIN": true, "GOPATH": true,
	"TMPDIR": true, "CARGO_TARGET_DIR": true, "npm_config_cache": true, "XDG_CACHE_HOME": true,
	"PYTHONPYCACHEPREFIX": true, "COVERAGE_FILE": true,
}

// sourcedEnv stands, in Env, for whatever a sourced file sets.
const sourcedEnv = "(sourced file)"

// harmlessValue reports variables the policy would ask about by name
// whose value the analyser has checked is harmless.
func harmlessValue(v envVar) bool {
	if !v.hasVal || !v.val.lit {
		return false
	}
	t := strings.TrimSpace(v.val.text)
	switch v.name {
	case "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER":
		return slices.Contains([]string{"", "cat", "less", "more", "less -R", "less -FRX", "less -FRSX"}, t)
	case "GIT_EDITOR", "EDITOR", "VISUAL", "GIT_SEQUENCE_EDITOR":
		return t == "true" || t == ":" || t == "cat"
	case "GOFLAGS":
		for _, f := range strings.Fields(t) {
			if !goFlagHarmless(f) {
				return false
			}
		}
		return true
	case "GOPROXY":
		for _, p := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == '|' }) {
			if p != "direct" && p != "off" && p != "https://proxy.golang.org" {
				return false
			}
		}
		return true
	case "NODE_OPTIONS":
		for _, f := range strings.Fields(t) {
			name, _, _ := strings.Cut(f, "=")
			switch name {
			case "--max-old-space-size", "--max_old_space_size", "--enable-source-maps", "--no-warnings", "--no-deprecation",
				"--experimental-vm-modules", "--trace-warnings", "--trace-deprecation", "--unhandled-rejections", "--stack-size",
				"--openssl-legacy-provider", "--max-http-header-size", "--trace-uncaught", "--experimental-specifier-resolution":
			default:
				return false
			}
		}
		return true
	case "PYTHONPATH", "NODE_PATH":
		// Directories of the project, relative to where it runs.
		for _, p := range strings.Split(t, ":") {
			if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || hasDotDot(p) || strings.Contains(p, "$") {
				return false
			}
		}
		return true
	case "GOWORK":
		return t == "off"
	case "GOTOOLCHAIN":
		return t == "local"
	}
	return false
}

// goFlagHarmless reports build flags that neither run nor load other code.
func goFlagHarmless(f string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(f, "-"), "=")
	switch strings.TrimPrefix(name, "-") {
	case "mod", "tags", "trimpath", "race", "msan", "asan", "v", "x", "count", "buildvcs", "modcacherw",
		"p", "cover", "short", "timeout", "failfast", "buildmode", "a", "n", "work", "json", "shuffle", "benchmem":
		return true
	}
	return false
}

// envFor returns the environment of the next command: the line's exported
// variables and the command's own assignments.
func (w *walker) envFor(own []envVar) []envVar {
	out := slices.Clone(own)
	for _, v := range w.exported {
		if !slices.ContainsFunc(out, func(o envVar) bool { return o.name == v.name }) {
			out = append(out, v)
		}
	}
	return out
}

// export records a variable exported to every later command of the line.
func (w *walker) export(v envVar) {
	for i, o := range w.exported {
		if o.name == v.name {
			w.exported[i] = v
			return
		}
	}
	w.exported = append(w.exported, v)
}

// assignOnly handles a command of assignments alone (X=1): under set -a,
// and for variables that change the shell, they act on later commands.
func (w *walker) assignOnly(c *syntax.CallExpr) {
	for _, a := range c.Assigns {
		if a.Name == nil {
			continue
		}
		v := w.envVar(a)
		if w.allexport || shellSpecial[v.name] || w.isExported(v.name) {
			w.export(v)
		}
	}
}

func (w *walker) isExported(name string) bool {
	return slices.ContainsFunc(w.exported, func(v envVar) bool { return v.name == name })
}

func (w *walker) envVar(a *syntax.Assign) envVar {
	v := envVar{name: a.Name.Value}
	switch {
	case a.Array != nil || a.Index != nil || a.Append:
		v.val = arg{text: "$(…)"} // not a plain value
		v.hasVal = true
	case a.Value != nil:
		v.val, v.hasVal = w.word(a.Value), true
	default:
		v.val, v.hasVal = arg{lit: true}, true
	}
	return v
}

// decl handles export, declare, typeset, local and readonly: with -x (or
// export itself) the variables go to later commands' environments.
func (w *walker) decl(d *syntax.DeclClause) {
	exporting := d.Variant != nil && d.Variant.Value == "export"
	unexport := false
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			f := w.word(a.Value).text
			if strings.HasPrefix(f, "-") && strings.ContainsRune(f, 'x') {
				exporting = true
			}
			if strings.HasPrefix(f, "+") && strings.ContainsRune(f, 'x') || f == "-n" && exporting {
				unexport = true
			}
			if strings.HasPrefix(f, "-") && strings.ContainsAny(f, "fF") {
				return // functions, not variables
			}
		}
	}
	for _, a := range d.Args {
		if a.Name == nil {
			continue
		}
		if a.Naked {
			// export X: the value the line gave X, or unknown.
			v := envVar{name: a.Name.Value, val: arg{text: "$" + a.Name.Value}, hasVal: true}
			if vs := w.vars[a.Name.Value]; len(vs) == 1 && !w.dynVars[a.Name.Value] {
				v.val = vs[0]
			}
			if exporting && !unexport {
				w.export(v)
			}
			continue
		}
		v := w.envVar(a)
		if exporting && !unexport || w.allexport || shellSpecial[v.name] {
			w.export(v)
		}
	}
}

// setOptions follows set -a / set -o allexport and their + forms.
func (w *walker) setOptions(args []arg) {
	for i, a := range args {
		t := a.text
		switch {
		case (t == "-o" || t == "+o") && i+1 < len(args) && args[i+1].text == "allexport":
			w.allexport = t == "-o"
		case len(t) > 1 && t[0] == '-' && t[1] != '-' && t != "-o" && strings.ContainsRune(t, 'a'):
			w.allexport = true
		case len(t) > 1 && t[0] == '+' && t != "+o" && strings.ContainsRune(t, 'a'):
			w.allexport = false
		}
	}
}

// sourced records what a file sourced with . or source may set: anything,
// except for the activation scripts of virtual environments and version
// managers, which set PATH and a few variables of their own.
func (w *walker) sourced(args []arg) {
	if len(args) == 0 {
		return
	}
	a := args[0]
	if a.lit {
		base := path.Base(a.text)
		dir := path.Base(path.Dir(a.text))
		if (base == "activate" || base == "activate.fish") && (dir == "bin" || dir == "Scripts") ||
			base == "nvm.sh" || a.text == "~/.cargo/env" || strings.HasSuffix(a.text, "/.cargo/env") {
			return
		}
	}
	w.export(envVar{name: sourcedEnv})
}

// commandEnv turns a command's environment into its Env names and the
// directories path variables make it write.
func (w *walker) commandEnv(cmd *Command, env []envVar) {
	for _, v := range env {
		if harmlessValue(v) {
			continue
		}
		cmd.Env = appendUniq(cmd.Env, v.name)
		if pathVars[v.name] && v.hasVal {
			if !v.val.lit {
				cmd.DynamicPaths = true
				continue
			}
			for _, p := range strings.Split(v.val.text, ":") {
				if p != "" {
					cmd.Writes = append(cmd.Writes, w.resolve(arg{text: p, lit: true}, false)...)
				}
			}
		}
	}
}

// toolPrefixes, toolSuffixes and toolNames recognise the variables some
// program, toolchain or the shell itself interprets: the namespaces of
// linkers, git, the Go, Node, Python, Ruby, Java, Rust, C and container
// toolchains, the shell, editors and pagers, proxies and certificates,
// clouds and agents, and names ending in FLAGS, OPTS, OPTIONS, PATH, HOME,
// COMMAND, CONFIG, … Any other name (DATABASE_URL, VITE_API_URL, PORT) is
// an application's setting, read by the project's own code.
var (
	toolPrefixes = []string{"LD_", "DYLD_", "GIT", "GO", "CGO_", "CARGO", "RUST", "NODE", "NPM", "YARN", "PNPM", "BUN_", "DENO_",
		"PYTHON", "PIP_", "UV_", "POETRY", "PYTEST", "VIRTUAL_ENV", "CONDA", "PERL", "RUBY", "GEM_", "BUNDLE", "JAVA", "JDK_", "_JAVA",
		"MAVEN", "GRADLE", "SBT_", "KOTLIN", "DOTNET", "MSBUILD", "NUGET", "MAKE", "CMAKE", "MESON", "NINJA", "BAZEL", "PKG_CONFIG",
		"XDG_", "BASH", "ZSH", "KSH", "FISH", "HIST", "PROMPT", "LESS", "MANPAGER", "MANPATH", "BROWSER", "TERMINAL", "SSH", "GPG", "GNUPG",
		"SSL_", "OPENSSL", "CURL", "WGET", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "REQUESTS_CA", "DOCKER", "COMPOSE_",
		"BUILDKIT", "BUILDX", "KUBE", "HELM", "AWS_", "AZURE", "GOOGLE", "GCLOUD", "CLOUDSDK", "GH_", "GITHUB", "GITLAB", "TAR_", "GZIP",
		"BZIP", "XZ_", "ZSTD", "LC_", "DISPLAY", "WAYLAND", "DBUS", "SUDO", "SYSTEMD", "JEST", "VITEST", "PLAYWRIGHT", "CYPRESS",
		"PUPPETEER", "ELECTRON", "ESLINT", "PRETTIER", "TS_NODE", "TSC_", "TSX_", "WEBPACK", "BABEL", "SWC_", "NX_", "TURBO", "LERNA",
		"PHP", "COMPOSER", "LUA", "JULIA", "STACK_", "CABAL", "OPAM", "OCAML", "ERL_", "ELIXIR", "MIX_", "CHROME", "FIREFOX", "EMACS",
		"VIM", "NVIM", "SQLITE", "PG", "MYSQL", "KRB5", "ANTHROPIC", "OPENAI", "CLAUDE", "GEMINI", "CODEX", "DOCKET", "PRE_COMMIT",
		"LEFTHOOK", "HUSKY", "DIRENV", "ASDF", "NVM_", "PYENV", "RBENV", "SDKMAN", "VOLTA", "MISE", "FNM_", "RUSTUP", "TMUX", "SCREEN",
		"TERMINFO", "TMP", "TEMP", "SHELL", "ENV", "IFS", "PS1", "PS2", "PS3", "PS4", "CDPATH", "PATH", "HOME", "MAIL", "EXECIGNORE",
		"FIGNORE", "GLOBIGNORE", "INPUTRC", "LOCPATH", "NLSPATH", "GCONV", "MALLOC", "TZDIR", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN", "ZDOTDIR"}
	toolSuffixes = []string{"FLAGS", "OPTS", "OPT", "OPTIONS", "PATH", "HOME", "COMMAND", "CMD", "CONFIG", "EDITOR", "PAGER", "SHELL",
		"WRAPPER", "PLUGINS", "PRELOAD", "AUDIT", "ASKPASS", "PROXY", "CA_BUNDLE", "CAFILE", "CERT", "SCRIPT", "LAUNCHER", "RUNNER",
		"LINKER", "COMPILER", "EXEC", "EXE", "PROGRAM", "INTERPRETER", "STARTUP", "TOOLCHAIN", "HOOKS", "HOOK", "LIBS", "LIB"}
	toolNames = map[string]bool{"CC": true, "CXX": true, "CPP": true, "AR": true, "AS": true, "LD": true, "NM": true, "FC": true,
		"M4": true, "YACC": true, "LEX": true, "RANLIB": true, "STRIP": true, "OBJCOPY": true, "OBJDUMP": true, "DLLTOOL": true,
		"WINDRES": true, "VISUAL": true, "PAGER": true, "EDITOR": true, "TERM": false, "USER": true, "LOGNAME": true, "PWD": true,
		"OLDPWD": true, "SHLVL": true, "UMASK": true}
)

// ToolVariable reports whether an environment variable's name is one some
// program or the shell interprets (see toolPrefixes), or is not a plain
// name at all (BASH_FUNC_x%%).
func ToolVariable(name string) bool {
	if name == sourcedEnv || name == "" {
		return true
	}
	for _, r := range name {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return true
		}
	}
	up := strings.ToUpper(name)
	if toolNames[up] {
		return true
	}
	for _, p := range toolPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	for _, s := range toolSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}
