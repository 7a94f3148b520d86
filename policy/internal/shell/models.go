package shell

import (
	"slices"
	"strings"
)

// models.go holds the option grammars of programs the default policy lets
// run without asking, where an option, subcommand or variable can make the
// program read, write or run something its operands do not show. The
// default is inverted: a subcommand or option the model does not know is
// Unmodelled, and the policy asks. Long options are matched the way the
// programs match them: --opt=value, --opt value, after operands, and any
// unambiguous prefix for programs that accept one (git, GNU tools).

// model is what a program model found in one call.
type model struct {
	unmodelled []string
	flags      []string // canonical names of abbreviated long options ("--hard" for --har)
	reads      []arg
	writes     []arg
}

func (m *model) unknown(what string) { m.unmodelled = appendUniq(m.unmodelled, what) }

// longName resolves a long option written as t ("--outp=x") against the
// names a program knows, accepting an unambiguous prefix when abbrev is
// set. It returns the canonical name ("--output"), the inline value, and
// whether it matched; ambiguous counts as not matched.
func longName(t string, abbrev bool, names []string) (canon, val string, hasVal, ok bool) {
	name, val, hasVal := strings.Cut(t, "=")
	if slices.Contains(names, name) {
		return name, val, hasVal, true
	}
	if !abbrev || len(name) < 3 {
		return "", val, hasVal, false
	}
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			if canon != "" {
				return "", val, hasVal, false
			}
			canon = n
		}
	}
	return canon, val, canon != "" && hasVal, canon != ""
}

// dangerPrefix reports a long option that is, or abbreviates, one of
// danger (for programs whose full option list the model does not hold);
// safe names that merely share a prefix do not count.
func dangerPrefix(t string, safe, danger []string) (string, string, bool) {
	name, val, _ := strings.Cut(t, "=")
	if len(name) < 4 || slices.Contains(safe, name) {
		return "", "", false
	}
	for _, d := range danger {
		if strings.HasPrefix(d, name) {
			return d, val, true
		}
	}
	return "", "", false
}

// programModel runs the model of a program, if it has one.
func programModel(name string, args []arg) *model {
	m := &model{}
	switch name {
	case "git":
		gitModel(m, args)
	case "go":
		goModel(m, args)
	case "docker", "podman", "docker-compose", "podman-compose", "nerdctl":
		dockerModel(m, name, args)
	case "make", "gmake":
		makeModel(m, args)
	case "npm", "pnpm", "yarn", "bun":
		npmModel(m, name, args)
		m.reads = append(m.reads, longOrShort(args, false, "", []string{"--env-file"}, []string{"--env-file"})...)
	case "gh":
		ghModel(m, args)
	case "jq", "yq":
		m.reads = append(m.reads, optPairs(args, "--rawfile", "--slurpfile")...)
	case "node", "nodejs":
		m.reads = append(m.reads, longOrShort(args, false, "", []string{"--env-file", "--env-file-if-exists"}, []string{"--env-file", "--env-file-if-exists"})...)
	case "date":
		m.reads = append(m.reads, longOrShort(args, true, "f", []string{"--file"}, dateLong)...)
		m.reads = append(m.reads, longOrShort(args, true, "r", []string{"--reference"}, dateLong)...)
	case "diff":
		m.reads = append(m.reads, longOrShort(args, true, "", []string{"--from-file", "--to-file", "--exclude-from"}, diffLong)...)
	case "sort":
		m.writes = append(m.writes, longOrShort(args, true, "o", []string{"--output"}, sortLong)...)
		m.reads = append(m.reads, longOrShort(args, true, "", []string{"--files0-from"}, sortLong)...)
	case "wc", "du":
		m.reads = append(m.reads, longOrShort(args, true, "", []string{"--files0-from"}, []string{"--files0-from"})...)
	case "grep", "egrep", "fgrep":
		m.reads = append(m.reads, longOrShort(args, true, "f", []string{"--file", "--exclude-from"}, []string{"--file", "--exclude-from", "--files-with-matches", "--files-without-match", "--fixed-strings"})...)
	case "cut":
		// --output-delimiter is a string, not a file: nothing to add.
	case "xargs":
		m.reads = append(m.reads, longOrShort(args, true, "a", []string{"--arg-file"}, []string{"--arg-file", "--arg-file"})...)
	case "gcc", "g++", "cc", "c++", "clang", "clang++":
		ccModel(m, args)
	case "hash":
		for _, a := range args {
			if strings.HasPrefix(a.text, "-") && strings.ContainsRune(a.text, 'p') {
				m.unknown("hash -p")
			}
		}
	case "pytest", "py.test":
		pytestModel(m, args)
	case "python", "python3":
		if i := slices.IndexFunc(args, func(a arg) bool { return a.text == "-m" }); i >= 0 && i+1 < len(args) {
			switch args[i+1].text {
			case "pytest":
				pytestModel(m, args[i+2:])
			case "dotenv", "pip":
				if args[i+1].text == "dotenv" {
					m.unknown("python -m dotenv")
				} else {
					pipModel(m, args[i+2:])
				}
			}
		}
	case "pip", "pip3":
		pipModel(m, args)
	case "kubectl":
		for _, a := range args {
			if l := strings.ToLower(a.text); l == "secret" || l == "secrets" || strings.HasPrefix(l, "secret/") || strings.HasPrefix(l, "secrets/") || l == "--raw" {
				m.unknown("kubectl " + a.text)
			}
		}
	case "poetry":
		if sub := firstOperand(args, nil); sub == "self" || sub == "config" && !slices.ContainsFunc(args, func(a arg) bool { return a.text == "--list" }) || sub == "source" || sub == "publish" {
			m.unknown("poetry " + sub)
		}
	case "prettier", "eslint", "tsc", "rustfmt", "ruff", "black":
		// Formatters given a write or fix option write their operands.
		if slices.ContainsFunc(args, func(a arg) bool {
			return a.text == "--write" || a.text == "-w" || strings.HasPrefix(a.text, "--write=") || strings.HasPrefix(a.text, "--fix") || name == "black" || name == "rustfmt" || name == "ruff" && slices.ContainsFunc(args, func(b arg) bool { return b.text == "format" })
		}) {
			for _, a := range args {
				if v, ok := strings.CutPrefix(a.text, "--write="); ok {
					m.writes = append(m.writes, arg{text: v, lit: a.lit})
				}
			}
			for _, o := range operands(args, "c", "--config", "--config-path", "--plugin", "--rulesdir", "--ext", "--parser", "--ignore-path", "--target-version", "--line-length", "--select", "--ignore") {
				switch {
				case o.text == "check" || o.text == "format":
				case o.text == "." || o.text == ".." || strings.HasSuffix(o.text, "/"):
					m.writes = append(m.writes, under(o, arg{text: "*", lit: true})) // the files in it
				default:
					m.writes = append(m.writes, o)
				}
			}
		}
		// These parse long options exactly: no abbreviations.
		for _, a := range args {
			if n, _, _ := strings.Cut(a.text, "="); slices.Contains([]string{"--plugin", "--rulesdir", "--resolve-plugins-relative-to", "--config-path", "--plugin-search-dir"}, n) {
				m.unknown(n)
			}
		}
		m.writes = append(m.writes, optPairs(args, "--outFile", "--outDir", "--out", "--declarationDir", "--tsBuildInfoFile")...)
	case "cargo":
		for _, a := range args {
			if n, _, _ := strings.Cut(a.text, "="); slices.Contains([]string{"--config", "--target-dir", "--root", "--git", "--manifest-path"}, n) || strings.HasPrefix(a.text, "-Z") {
				m.unknown("cargo " + n)
			}
		}
		if sub := firstOperand(args, nil); sub == "install" || sub == "uninstall" || sub == "publish" || sub == "login" {
			m.unknown("cargo " + sub)
		}
	case "rustc":
		for i, a := range args {
			if a.text == "-C" && i+1 < len(args) && !strings.HasPrefix(args[i+1].text, "opt-level") && !strings.HasPrefix(args[i+1].text, "debuginfo") ||
				strings.HasPrefix(a.text, "-Clinker") || strings.HasPrefix(a.text, "-Z") {
				m.unknown("rustc " + a.text)
			}
		}
	case "deno":
		denoModel(m, args)
	case "pre-commit":
		if sub := firstOperand(args, nil); sub != "" && sub != "run" && sub != "install" && sub != "autoupdate" && sub != "validate-config" && sub != "--version" {
			m.unknown("pre-commit " + sub)
		}
	case "uv", "uvx", "pipx":
		uvModel(m, name, args)
	case "tar":
		for _, a := range args {
			if d, _, ok := dangerPrefix(a.text, []string{"--to-stdout"}, []string{"--transform", "--xform", "--to-command", "--use-compress-program", "--checkpoint-action", "--info-script", "--new-volume-script", "--rsh-command", "--absolute-names"}); ok {
				m.unknown("tar " + d)
			}
		}
	case "cp", "mv", "ln", "install":
		m.writes = append(m.writes, longOrShort(args, true, "", []string{"--target-directory"}, []string{"--target-directory", "--backup", "--strip-trailing-slashes"})...)
	}
	return m
}

var (
	dateLong = []string{"--date", "--debug", "--file", "--iso-8601", "--resolution", "--rfc-email", "--rfc-3339", "--reference", "--set", "--utc", "--universal", "--help", "--version"}
	diffLong = []string{"--normal", "--brief", "--report-identical-files", "--context", "--unified", "--ed", "--rcs", "--side-by-side",
		"--width", "--left-column", "--suppress-common-lines", "--show-c-function", "--show-function-line", "--label", "--expand-tabs",
		"--initial-tab", "--tabsize", "--suppress-blank-empty", "--paginate", "--new-file", "--unidirectional-new-file", "--ignore-case",
		"--ignore-file-name-case", "--no-ignore-file-name-case", "--ignore-tab-expansion", "--ignore-trailing-space", "--ignore-space-change",
		"--ignore-all-space", "--ignore-blank-lines", "--ignore-matching-lines", "--text", "--strip-trailing-cr", "--recursive",
		"--no-dereference", "--exclude", "--exclude-from", "--starting-file", "--from-file", "--to-file", "--minimal", "--horizon-lines",
		"--speed-large-files", "--color", "--palette", "--help", "--version", "--old-group-format", "--new-group-format",
		"--changed-group-format", "--unchanged-group-format", "--line-format", "--old-line-format", "--new-line-format", "--unchanged-line-format"}
	sortLong = []string{"--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort", "--ignore-nonprinting",
		"--month-sort", "--human-numeric-sort", "--numeric-sort", "--random-sort", "--random-source", "--reverse", "--sort", "--version-sort",
		"--batch-size", "--check", "--compress-program", "--debug", "--files0-from", "--key", "--merge", "--output", "--stable",
		"--buffer-size", "--field-separator", "--temporary-directory", "--parallel", "--unique", "--zero-terminated"}
)

// longOrShort returns the values of an option given as -X V, -XV, --opt V,
// --opt=V, or an abbreviation of --opt among all (the program's options).
func longOrShort(args []arg, abbrev bool, short string, want, all []string) []arg {
	var out []arg
	if short != "" {
		out = optValues(args, short)
	}
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			break
		}
		if !strings.HasPrefix(t, "--") {
			continue
		}
		canon, val, hasVal, ok := longName(t, abbrev, all)
		if !ok || !slices.Contains(want, canon) {
			continue
		}
		if hasVal {
			out = append(out, arg{text: val, lit: args[i].lit})
		} else if i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}

// optPairs returns the values of long options given as --opt V or --opt=V
// (the last for programs with single-dash long options too).
func optPairs(args []arg, names ...string) []arg {
	var out []arg
	for i := 0; i < len(args); i++ {
		t := args[i].text
		for _, n := range names {
			if t == n && i+1 < len(args) {
				out = append(out, args[i+1:i+2]...)
			} else if v, ok := strings.CutPrefix(t, n+"="); ok {
				out = append(out, arg{text: v, lit: args[i].lit})
			}
		}
		if t == "--rawfile" || t == "--slurpfile" {
			i++ // NAME FILE: the file is the second word
			if i+1 < len(args) {
				out[len(out)-1] = args[i+1]
			}
		}
	}
	return out
}

// firstOperand returns the first argument that is not an option, skipping
// the values of the options in withVal.
func firstOperand(args []arg, withVal []string) string {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if slices.Contains(withVal, t) {
			i++
			continue
		}
		if !strings.HasPrefix(t, "-") {
			return t
		}
	}
	return ""
}

// gitSafeConfig are configuration keys (lower case, or a prefix ending in
// ".") that git -c may set without running or loading anything.
var gitSafeConfig = []string{
	"color.", "core.quotepath", "core.autocrlf", "core.safecrlf", "core.abbrev", "core.whitespace", "core.ignorecase",
	"user.name", "user.email", "user.signingkey", "author.", "committer.", "advice.", "init.defaultbranch",
	"pull.rebase", "pull.ff", "merge.ff", "merge.conflictstyle", "log.", "format.pretty", "commit.gpgsign", "tag.gpgsign",
	"gc.auto", "fetch.prune", "push.default", "push.autosetupremote", "rebase.autostash", "rebase.autosquash", "status.",
	"column.ui", "i18n.", "diff.noprefix", "diff.renames", "diff.mnemonicprefix", "diff.algorithm", "diff.colormoved",
	"blame.", "branch.sort", "tag.sort", "versionsort.", "pager.branch", "maintenance.auto", "feature.manyfiles",
	"submodule.recurse", "http.postbuffer", "protocol.version", "checkout.defaultremote",
}

// gitSubs are the git subcommands the model knows; others ask.
var gitSubs = map[string]bool{
	"status": true, "diff": true, "log": true, "show": true, "add": true, "commit": true, "checkout": true, "switch": true,
	"branch": true, "merge": true, "rebase": true, "pull": true, "fetch": true, "push": true, "stash": true, "tag": true,
	"remote": true, "reset": true, "restore": true, "rm": true, "mv": true, "blame": true, "grep": true, "ls-files": true,
	"ls-tree": true, "ls-remote": true, "rev-parse": true, "rev-list": true, "describe": true, "shortlog": true, "config": true,
	"cherry-pick": true, "revert": true, "clean": true, "worktree": true, "submodule": true, "bisect": true, "reflog": true,
	"cat-file": true, "count-objects": true, "fsck": true, "notes": true, "format-patch": true, "apply": true, "am": true,
	"archive": true, "init": true, "clone": true, "gc": true, "show-ref": true, "for-each-ref": true, "name-rev": true,
	"merge-base": true, "diff-tree": true, "diff-index": true, "diff-files": true, "whatchanged": true, "range-diff": true,
	"help": true, "version": true, "var": true, "check-ignore": true, "check-attr": true, "hash-object": true,
	"sparse-checkout": true, "cherry": true, "annotate": true, "verify-commit": true, "verify-tag": true,
	"interpret-trailers": true, "stripspace": true, "write-tree": true, "show-branch": true, "bundle": true, "lfs": true,
	"mailinfo": true, "rerere": true, "column": true, "check-ref-format": true, "maintenance": false, "update-ref": true,
	"symbolic-ref": true, "update-index": true, "repack": true, "pack-refs": true, "merge-tree": true, "mergetool": false,
}

// gitLong are the long options of the git subcommands whose loss of work
// or writes depend on an option; git accepts any unambiguous prefix.
var gitLong = map[string][]string{
	"reset": {"--hard", "--soft", "--mixed", "--keep", "--merge", "--quiet", "--patch", "--recurse-submodules",
		"--no-recurse-submodules", "--no-refresh", "--refresh", "--pathspec-from-file", "--pathspec-file-nul", "--intent-to-add", "--no-quiet"},
	"checkout": {"--force", "--ours", "--theirs", "--merge", "--detach", "--orphan", "--track", "--no-track", "--patch", "--quiet",
		"--progress", "--no-progress", "--conflict", "--overwrite-ignore", "--no-overwrite-ignore", "--ignore-other-worktrees",
		"--recurse-submodules", "--no-recurse-submodules", "--pathspec-from-file", "--pathspec-file-nul", "--guess", "--no-guess",
		"--overlay", "--no-overlay", "--ignore-skip-worktree-bits"},
	"switch": {"--create", "--force-create", "--force", "--discard-changes", "--detach", "--orphan", "--track", "--no-track",
		"--merge", "--conflict", "--quiet", "--progress", "--no-progress", "--guess", "--no-guess", "--ignore-other-worktrees",
		"--recurse-submodules", "--no-recurse-submodules"},
	"restore": {"--source", "--staged", "--worktree", "--ours", "--theirs", "--merge", "--conflict", "--patch", "--overlay",
		"--no-overlay", "--quiet", "--progress", "--no-progress", "--ignore-unmerged", "--ignore-skip-worktree-bits",
		"--recurse-submodules", "--no-recurse-submodules", "--pathspec-from-file", "--pathspec-file-nul"},
	"stash": {"--all", "--include-untracked", "--no-include-untracked", "--keep-index", "--no-keep-index", "--patch", "--staged",
		"--message", "--quiet", "--pathspec-from-file", "--pathspec-file-nul", "--index", "--only-untracked"},
	"clean": {"--force", "--dry-run", "--quiet", "--exclude", "--interactive"},
	"gc":    {"--prune", "--no-prune", "--aggressive", "--auto", "--quiet", "--force", "--keep-largest-pack", "--cruft", "--no-cruft", "--detach"},
	"push": {"--force", "--force-with-lease", "--no-force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune",
		"--all", "--branches", "--tags", "--follow-tags", "--set-upstream", "--dry-run", "--no-verify", "--verify", "--verbose", "--quiet",
		"--atomic", "--porcelain", "--repo", "--receive-pack", "--exec", "--push-option", "--signed", "--recurse-submodules",
		"--thin", "--no-thin", "--progress", "--ipv4", "--ipv6", "--no-signed"},
	"branch": {"--delete", "--force", "--move", "--copy", "--list", "--all", "--remotes", "--verbose", "--quiet", "--track",
		"--no-track", "--set-upstream-to", "--unset-upstream", "--edit-description", "--contains", "--no-contains", "--merged",
		"--no-merged", "--sort", "--points-at", "--format", "--show-current", "--color", "--no-color", "--column", "--no-column",
		"--abbrev", "--no-abbrev", "--ignore-case", "--create-reflog", "--recurse-submodules", "--omit-empty"},
}

// gitOutputs are options of the log and diff family that write a file or
// run a program, matched with any prefix git would accept.
var gitDanger = []string{"--output", "--ext-diff", "--open-files-in-pager", "--exec", "--extcmd", "--upload-pack", "--receive-pack",
	"--template", "--separate-git-dir", "--config-env", "--tool", "--textconv"}

// gitSafeLong are real options that share a prefix with gitDanger.
var gitSafeLong = []string{"--output-directory", "--output-indicator-new", "--output-indicator-old", "--output-indicator-context",
	"--no-ext-diff", "--no-textconv", "--exclude", "--exclude-standard", "--exclude-per-directory", "--exclude-from", "--exit-code",
	"--expire", "--expand-tabs", "--exact-match", "--exclude-hidden", "--executable"}

func gitModel(m *model, args []arg) {
	// Global options, up to the subcommand.
	i := 0
	for ; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-C":
			if i+1 < len(args) {
				m.reads = append(m.reads, args[i+1]) // the repository git works in
			}
			i++
		case t == "--work-tree" || t == "--namespace":
			i++
		case t == "-c":
			if i+1 < len(args) {
				gitConfigPair(m, args[i+1])
			}
			i++
		case strings.HasPrefix(t, "-c") && len(t) > 2:
			gitConfigPair(m, arg{text: t[2:], lit: args[i].lit})
		case strings.HasPrefix(t, "--work-tree=") || strings.HasPrefix(t, "--namespace="):
		case t == "--no-pager" || t == "-P" || t == "-p" || t == "--paginate" || t == "--no-replace-objects" ||
			t == "--literal-pathspecs" || t == "--glob-pathspecs" || t == "--noglob-pathspecs" || t == "--icase-pathspecs" ||
			t == "--no-optional-locks" || t == "--no-lazy-fetch" || t == "--no-advice" || t == "--bare" || t == "--version" || t == "--help" || t == "-h" ||
			t == "--html-path" || t == "--man-path" || t == "--info-path" || t == "--exec-path" || t == "-v":
		case strings.HasPrefix(t, "-"):
			name, _, _ := strings.Cut(t, "=")
			m.unknown("git " + name)
		default:
			goto sub
		}
	}
	return
sub:
	sub := args[i].text
	rest := args[i+1:]
	for _, a := range rest {
		// The ext:: and fd:: transports run a command.
		if strings.Contains(a.text, "ext::") || strings.Contains(a.text, "fd::") {
			m.unknown("git " + sub + " ext::")
		}
	}
	if !gitSubs[sub] {
		m.unknown("git " + sub)
		return
	}
	long := gitLong[sub]
	for j := 0; j < len(rest); j++ {
		t := rest[j].text
		if t == "--" {
			break
		}
		if !strings.HasPrefix(t, "--") {
			continue
		}
		if long != nil {
			// Resolve an abbreviation of an option whose meaning the
			// policy looks at (reset --har is --hard).
			if canon, _, _, ok := longName(t, true, long); ok {
				m.flags = appendUniq(m.flags, canon)
				continue
			}
			if n, _, _ := strings.Cut(t, "="); len(n) > 2 && slices.ContainsFunc(long, func(l string) bool { return strings.HasPrefix(l, n) }) {
				m.unknown("git " + sub + " " + n) // ambiguous: which one git takes is not modelled
			}
		}
		d, val, ok := dangerPrefix(t, gitSafeLong, gitDanger)
		if !ok {
			continue
		}
		switch {
		case d == "--output" && sub != "archive":
			if strings.Contains(t, "=") {
				m.writes = append(m.writes, arg{text: val, lit: rest[j].lit})
			} else if j+1 < len(rest) {
				m.writes = append(m.writes, rest[j+1])
				j++
			}
		case d == "--template" && sub != "commit" && sub != "init" && sub != "clone":
		case d == "--separate-git-dir":
			if strings.Contains(t, "=") {
				m.writes = append(m.writes, arg{text: val, lit: rest[j].lit})
			} else if j+1 < len(rest) {
				m.writes = append(m.writes, rest[j+1])
				j++
			}
		case d == "--textconv" || d == "--output" || d == "--exec" || d == "--upload-pack" || d == "--receive-pack":
			// --textconv runs only configured drivers; archive --output is
			// a path (gitPaths); the rest are inline code (inlineCode).
		default:
			m.unknown("git " + sub + " " + d)
		}
	}
	ops := operands(rest, "")
	switch sub {
	case "grep":
		if slices.ContainsFunc(rest, func(a arg) bool { return strings.HasPrefix(a.text, "-O") }) {
			m.unknown("git grep -O")
		}
	case "commit", "tag", "notes", "merge":
		m.reads = append(m.reads, longOrShort(rest, true, "F", []string{"--file"}, []string{"--file", "--fixup", "--force"})...)
		if sub == "commit" {
			m.reads = append(m.reads, longOrShort(rest, true, "t", []string{"--template"}, []string{"--template", "--trailer"})...)
		}
	case "worktree":
		if len(ops) > 0 && ops[0].text == "add" {
			// worktree add [-b B] PATH [COMMIT]: PATH is written.
			wops := operands(rest, "bB", "--reason")
			if len(wops) > 1 {
				m.writes = append(m.writes, wops[1])
			}
		}
		if len(ops) > 0 && (ops[0].text == "move" || ops[0].text == "prune") {
			m.unknown("git worktree " + ops[0].text)
		}
	case "clone":
		var cops []arg
		for j := 0; j < len(rest); j++ {
			t := rest[j].text
			switch {
			case slices.Contains([]string{"-o", "-b", "-c", "-j", "-u", "--origin", "--branch", "--config", "--depth", "--jobs", "--reference", "--filter", "--server-option", "--bundle-uri", "--upload-pack", "--template", "--separate-git-dir"}, t):
				j++
			case strings.HasPrefix(t, "-"):
			default:
				cops = append(cops, rest[j])
			}
		}
		if len(cops) > 1 {
			m.writes = append(m.writes, cops[1])
		} else if len(cops) == 1 {
			m.writes = append(m.writes, arg{text: gitCloneDir(cops[0].text), lit: cops[0].lit})
		}
		for _, v := range optValues(rest, "c", "--config") {
			gitConfigPair(m, v)
		}
	case "init":
		if len(ops) > 0 {
			m.writes = append(m.writes, ops[0])
		}
	case "config":
		if len(ops) >= 2 && !slices.Contains([]string{"get", "list", "--get"}, ops[0].text) {
			gitConfigPair(m, arg{text: ops[0].text, lit: ops[0].lit})
		}
		global := slices.ContainsFunc(rest, func(a arg) bool { return a.text == "--global" })
		system := slices.ContainsFunc(rest, func(a arg) bool { return a.text == "--system" })
		read := slices.ContainsFunc(rest, func(a arg) bool {
			return strings.HasPrefix(a.text, "--get") || a.text == "--list" || a.text == "-l" || a.text == "--show-origin"
		}) || len(ops) == 1 || len(ops) == 2 && (ops[0].text == "get" || ops[0].text == "list")
		if !read {
			switch {
			case global:
				m.writes = append(m.writes, arg{text: "~/.gitconfig", lit: true})
			case system:
				m.writes = append(m.writes, arg{text: "/etc/gitconfig", lit: true})
			}
			m.writes = append(m.writes, longOrShort(rest, false, "f", []string{"--file"}, []string{"--file"})...)
		}
	case "am", "apply":
		for _, d := range longOrShort(rest, true, "", []string{"--directory"}, []string{"--directory", "--index", "--cached", "--check"}) {
			m.writes = append(m.writes, under(d, arg{text: "*", lit: true}))
		}
	case "bundle":
		if len(ops) > 1 && ops[0].text == "create" {
			m.writes = append(m.writes, ops[1])
		}
	case "reflog":
		if len(ops) > 0 && (ops[0].text == "delete" || ops[0].text == "expire" || ops[0].text == "drop") {
			m.unknown("git reflog " + ops[0].text)
		}
	case "update-ref":
		m.unknown("git update-ref")
	case "symbolic-ref":
		if len(ops) > 1 || slices.ContainsFunc(rest, func(a arg) bool { return a.text == "-d" || a.text == "--delete" }) {
			m.unknown("git symbolic-ref") // sets or deletes; one operand only reads
		}
	case "update-index":
		for _, a := range rest {
			if strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--chmod=") && a.text != "--refresh" && a.text != "--really-refresh" && a.text != "-q" && a.text != "--add" {
				m.unknown("git update-index " + a.text)
			}
		}
	case "lfs":
		if len(ops) == 0 || !slices.Contains([]string{"pull", "fetch", "ls-files", "status", "track", "untrack", "env", "version", "checkout", "install"}, ops[0].text) {
			m.unknown("git lfs")
		}
	case "submodule":
		if len(ops) > 0 && ops[0].text == "deinit" {
			m.unknown("git submodule deinit")
		}
	case "remote":
		if len(ops) > 0 && (ops[0].text == "set-url" || ops[0].text == "remove" || ops[0].text == "rm") {
			m.unknown("git remote " + ops[0].text)
		}
	case "maintenance", "rerere":
		if len(ops) > 0 && (ops[0].text == "forget" || ops[0].text == "clear" || ops[0].text == "gc") {
			m.unknown("git " + sub + " " + ops[0].text)
		}
	}
}

func gitCloneDir(url string) string {
	url = strings.TrimSuffix(strings.TrimSuffix(url, "/"), ".git")
	if i := strings.LastIndexAny(url, "/:"); i >= 0 {
		url = url[i+1:]
	}
	if url == "" {
		return "."
	}
	return url
}

func gitConfigPair(m *model, a arg) {
	key, _, _ := strings.Cut(strings.ToLower(a.text), "=")
	if !a.lit {
		m.unknown("git -c " + a.text)
		return
	}
	for _, s := range gitSafeConfig {
		if key == s || strings.HasSuffix(s, ".") && strings.HasPrefix(key, s) && !strings.Contains(key, "command") && !strings.Contains(key, "program") {
			return
		}
	}
	m.unknown("git -c " + key)
}

// goSubs are the go subcommands the model knows.
var goSubs = map[string]bool{
	"build": true, "test": true, "vet": true, "fmt": true, "mod": true, "get": true, "list": true, "doc": true, "version": true,
	"env": true, "run": true, "generate": true, "install": true, "clean": true, "work": true, "tool": true, "help": true, "bug": false,
	"fix": true, "telemetry": true,
}

// goBuildVal are go build flags taking a value that is not a file, and
// goBuildBool the boolean ones; -o, -coverprofile and friends are files.
var goBuildVal = []string{"p", "tags", "mod", "ldflags", "gcflags", "asmflags", "buildmode", "compiler", "gccgoflags", "installsuffix",
	"pkgdir", "buildvcs", "covermode", "coverpkg", "run", "skip", "bench", "benchtime", "count", "cpu", "timeout", "parallel", "list",
	"shuffle", "fuzz", "fuzztime", "fuzzminimizetime", "blockprofilerate", "mutexprofilefraction", "memprofilerate", "vet", "f",
	"type", "tags", "outputdir", "C", "o", "vettool", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "modfile", "overlay", "pgo", "json", "test.run"}
var goBuildBool = []string{"a", "n", "race", "msan", "asan", "cover", "v", "work", "x", "trimpath", "linkshared", "modcacherw", "short",
	"failfast", "benchmem", "json", "c", "i", "u", "t", "d", "m", "e", "deps", "export", "find", "test", "compiled", "retracted", "versions",
	"reuse", "insecure", "l", "s", "w", "r", "cache", "testcache", "modcache", "fuzzcache", "all", "std", "fix", "diff", "fullpath", "json"}

func goModel(m *model, args []arg) {
	sub := ""
	var rest []arg
	for i, a := range args {
		if !strings.HasPrefix(a.text, "-") {
			sub, rest = a.text, args[i+1:]
			break
		}
		if a.text != "-C" && a.text != "-v" {
			m.unknown("go " + a.text)
		}
	}
	if sub == "" {
		return
	}
	if !goSubs[sub] {
		m.unknown("go " + sub)
		return
	}
	ops := operands(rest, "")
	// Remote code: a package at a version is downloaded and built.
	if sub == "run" || sub == "install" {
		for _, o := range ops {
			if strings.Contains(o.text, "@") {
				m.unknown("go " + sub + " " + o.text)
			}
		}
	}
	switch sub {
	case "env":
		if slices.ContainsFunc(rest, func(a arg) bool { return a.text == "-w" || a.text == "-u" }) {
			m.unknown("go env -w")
		}
		return
	case "tool":
		// A bare name is a tool the module declares (go.mod tool lines)
		// or the distribution's; a path or package@version is not.
		if len(ops) > 0 && (strings.ContainsAny(ops[0].text, "/@.") || !ops[0].lit) {
			m.unknown("go tool " + ops[0].text)
		}
		if len(ops) > 0 && ops[0].text == "cover" {
			m.writes = append(m.writes, optValues(rest, "o")...)
		}
		return
	case "work":
		if len(ops) > 0 && ops[0].text == "use" {
			m.reads = append(m.reads, ops[1:]...)
		}
		return
	case "mod":
		if len(ops) > 0 && ops[0].text == "edit" && slices.ContainsFunc(rest, func(a arg) bool { return strings.HasPrefix(a.text, "-replace") }) {
			m.unknown("go mod edit -replace")
		}
		if len(ops) > 0 && ops[0].text == "vendor" {
			m.writes = append(m.writes, optValues(rest, "o")...)
		}
		return
	case "clean":
		if slices.ContainsFunc(rest, func(a arg) bool { return a.text == "-modcache" || a.text == "--modcache" }) {
			m.unknown("go clean -modcache")
		}
	}
	for i := 0; i < len(rest); i++ {
		t := rest[i].text
		if t == "--" {
			break
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(t, "-"), "-"), "=")
		takesVal := slices.Contains(goBuildVal, name)
		if name == "args" {
			break // what follows is the test binary's
		}
		if !takesVal && !slices.Contains(goBuildBool, name) && !strings.HasPrefix(name, "test.") {
			// go vet takes its analyzers' flags (-printf=false).
			if sub != "vet" {
				m.unknown("go " + sub + " -" + name)
			}
			continue
		}
		v := arg{text: val, lit: rest[i].lit}
		if takesVal && !hasVal && i+1 < len(rest) {
			v = rest[i+1]
			i++
		}
		switch name {
		case "o", "coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace", "outputdir":
			m.writes = append(m.writes, v)
		case "modfile", "overlay", "pgo", "pkgdir", "vet", "vettool":
			if name == "vet" && (v.text == "off" || v.text == "all" || !strings.ContainsAny(v.text, "/.")) {
				continue
			}
			m.unknown("go -" + name)
		case "ldflags", "gcflags", "asmflags", "gccgoflags":
			// A substitution inside (-X main.commit=$(git rev-parse HEAD))
			// is analysed on its own; the literal flags are judged here.
			if strings.Contains(v.text, "extld") || strings.Contains(v.text, "-plugin") || strings.Contains(v.text, "importcfg") {
				m.unknown("go -" + name + " " + v.text)
			}
		case "compiler":
			m.unknown("go -compiler")
		}
	}
}

// dockerSubs are the docker subcommands that read state or build images.
var dockerSubs = map[string]bool{
	"ps": true, "images": true, "logs": true, "build": true, "inspect": true, "version": true, "info": true, "pull": true,
	"stats": true, "top": true, "history": true, "search": true, "port": true, "diff": true, "events": true, "buildx": true,
	"compose": true, "image": true, "container": true, "volume": true, "network": true, "system": true, "tag": true,
}

func dockerModel(m *model, name string, args []arg) {
	rest := args
	// Global options: any that points docker elsewhere asks.
	for len(rest) > 0 && strings.HasPrefix(rest[0].text, "-") {
		t := rest[0].text
		if t != "--debug" && t != "-D" && t != "--log-level" && !strings.HasPrefix(t, "--log-level=") {
			m.unknown(name + " " + strings.SplitN(t, "=", 2)[0])
		}
		rest = rest[1:]
		if t == "--log-level" && len(rest) > 0 {
			rest = rest[1:]
		}
	}
	if name == "docker-compose" || name == "podman-compose" {
		composeModel(m, name, rest)
		return
	}
	if len(rest) == 0 {
		return
	}
	sub := rest[0].text
	rest = rest[1:]
	switch sub {
	case "compose":
		composeModel(m, name+" compose", rest)
		return
	case "image", "container", "volume", "network", "system":
		if len(rest) == 0 || !slices.Contains([]string{"ls", "list", "inspect", "history", "df", "info", "ps", "top", "logs", "stats", "port", "diff"}, rest[0].text) {
			m.unknown(name + " " + sub)
		}
		return
	case "buildx":
		if len(rest) == 0 || rest[0].text != "build" && rest[0].text != "ls" && rest[0].text != "version" && rest[0].text != "du" {
			m.unknown(name + " buildx")
			return
		}
		if rest[0].text == "build" {
			dockerBuild(m, name, rest[1:])
		}
		return
	case "build":
		dockerBuild(m, name, rest)
		return
	}
	if !dockerSubs[sub] {
		m.unknown(name + " " + sub)
	}
}

// dockerBuild: the build context and Dockerfile are read, outputs
// written; secrets, SSH agents, extra contexts and pushes ask.
func dockerBuild(m *model, name string, args []arg) {
	safe := map[string]bool{"-t": true, "--tag": true, "--build-arg": true, "--target": true, "--platform": true, "--label": true,
		"--progress": true, "--network": false, "--cache-from": true, "--cache-to": true, "--pull": true, "--no-cache": true, "--quiet": true, "-q": true,
		"--load": true, "--rm": true, "--force-rm": true, "--squash": true, "--compress": true, "--iidfile": true, "--metadata-file": true,
		"-f": true, "--file": true, "--add-host": true, "--shm-size": true, "--ulimit": true, "--memory": true, "-m": true,
		"--cpuset-cpus": true, "--no-cache-filter": true, "--builder": true, "--annotation": true, "--provenance": true, "--sbom": true, "--check": true}
	withVal := map[string]bool{"-t": true, "--tag": true, "--build-arg": true, "--target": true, "--platform": true, "--label": true,
		"--progress": true, "--cache-from": true, "--cache-to": true, "--iidfile": true, "--metadata-file": true, "-f": true, "--file": true,
		"--add-host": true, "--shm-size": true, "--ulimit": true, "--memory": true, "-m": true, "--cpuset-cpus": true, "--no-cache-filter": true,
		"--builder": true, "--annotation": true, "--provenance": true, "--sbom": true, "-o": true, "--output": true, "--secret": true,
		"--ssh": true, "--build-context": true, "--network": true, "--allow": true}
	var ops []arg
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if !strings.HasPrefix(t, "-") || t == "-" {
			ops = append(ops, args[i])
			continue
		}
		n, v, has := strings.Cut(t, "=")
		val := arg{text: v, lit: args[i].lit}
		if !has && withVal[n] && i+1 < len(args) {
			val = args[i+1]
			i++
		}
		switch {
		case n == "-f" || n == "--file":
			if val.text == "-" {
				m.unknown(name + " build -f -")
			} else {
				m.reads = append(m.reads, val)
			}
		case n == "-o" || n == "--output":
			dest := val.text
			for _, kv := range strings.Split(val.text, ",") {
				if d, ok := strings.CutPrefix(kv, "dest="); ok {
					dest = d
				}
			}
			if strings.HasPrefix(dest, "type=") {
				continue // type=docker, type=image: no file
			}
			m.writes = append(m.writes, under(arg{text: dest, lit: val.lit}, arg{text: "*", lit: true}))
		case n == "--iidfile" || n == "--metadata-file":
			m.writes = append(m.writes, val)
		case n == "--push" || strings.Contains(val.text, "push=true"):
			m.unknown(name + " build --push")
		case safe[n]:
		default:
			m.unknown(name + " build " + n)
		}
	}
	for _, o := range ops {
		if strings.Contains(o.text, "://") {
			m.unknown(name + " build " + o.text)
			continue
		}
		// The context is sent to the builder: every file under it read.
		m.reads = append(m.reads, o, under(o, arg{text: "*", lit: true}))
	}
}

// composeModel: only the subcommands that read state or build.
func composeModel(m *model, name string, args []arg) {
	rest := args
	for len(rest) > 0 && strings.HasPrefix(rest[0].text, "-") {
		t := rest[0].text
		n, v, has := strings.Cut(t, "=")
		val := arg{text: v, lit: rest[0].lit}
		rest = rest[1:]
		if !has && len(rest) > 0 && (n == "-f" || n == "--file" || n == "-p" || n == "--project-name" || n == "--profile" || n == "--env-file" || n == "--project-directory" || n == "--ansi" || n == "--progress") {
			val = rest[0]
			rest = rest[1:]
		}
		switch n {
		case "-f", "--file":
			if val.text == "-" || strings.Contains(val.text, "://") {
				m.unknown(name + " -f " + val.text)
			} else {
				m.reads = append(m.reads, val)
			}
		case "--env-file":
			m.reads = append(m.reads, val)
		case "-p", "--project-name", "--profile", "--ansi", "--progress", "--no-ansi", "--compatibility", "--dry-run":
		default:
			m.unknown(name + " " + n)
		}
	}
	if len(rest) == 0 {
		return
	}
	switch rest[0].text {
	case "ps", "logs", "config", "build", "images", "version", "ls", "top", "events", "port", "pull":
	default:
		m.unknown(name + " " + rest[0].text)
	}
}

// makeModel: options that read another makefile, change directory or run
// code ask; VAR=value arguments are make's environment.
func makeModel(m *model, args []arg) {
	safeVars := map[string]bool{"V": true, "VERBOSE": true, "Q": true, "DEBUG": true, "GOFLAGS": false, "CGO_ENABLED": true, "GOOS": true,
		"GOARCH": true, "VERSION": true, "TAG": true, "BUILD": true, "RELEASE": true, "TARGET": true, "ARGS": true, "TESTS": true,
		"RUN": true, "PKG": true, "COUNT": true, "TIMEOUT": true, "OUT": false, "DESTDIR": false, "PREFIX": false, "NAME": true, "ENV": false}
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if n, v, ok := strings.Cut(t, "="); ok && !strings.HasPrefix(t, "-") {
			// A variable overrides the makefile's: a tool's variable
			// (CC, SHELL, MAKEFLAGS) or a value with shell syntax, which
			// a recipe would run, asks; a project's own setting does not.
			harmless := safeVars[n] || harmlessValue(envVar{name: n, val: arg{text: v, lit: args[i].lit}, hasVal: true}) ||
				!ToolVariable(n) && !strings.HasPrefix(n, ".") && args[i].lit && !strings.ContainsAny(v, "$`;|&<>()\\")
			if !harmless {
				m.unknown("make " + n + "=")
			}
			continue
		}
		if !strings.HasPrefix(t, "-") {
			continue
		}
		if strings.HasPrefix(t, "--") {
			canon, _, _, ok := longName(t, true, makeLong)
			switch {
			case !ok:
				m.unknown("make " + t)
			case canon == "--file" || canon == "--makefile":
				// Like the default Makefile, another makefile is a file
				// make reads and whose recipes it runs: a read, judged
				// by the file rules.
				_, file, attached := strings.Cut(t, "=")
				lit := args[i].lit
				if !attached && i+1 < len(args) {
					i++
					file, lit = args[i].text, args[i].lit
				}
				m.reads = append(m.reads, arg{text: file, lit: lit})
			case canon == "--include-dir" || canon == "--directory" || canon == "--eval" || canon == "--what-if" || canon == "--new-file" || canon == "--assume-new" || canon == "--assume-old" || canon == "--old-file":
				m.unknown("make " + canon)
			}
			continue
		}
		for k := 1; k < len(t); k++ {
			c := t[k]
			switch {
			case strings.IndexByte("fICEoWv", c) >= 0:
				if (c == 'C' || c == 'f') && (k+1 < len(t) && t[k+1:] != "" || i+1 < len(args)) {
					operand, lit := t[k+1:], args[i].lit
					if operand == "" && i+1 < len(args) {
						operand, lit = args[i+1].text, args[i+1].lit
					}
					if c == 'C' {
						operand += "/Makefile"
					}
					m.reads = append(m.reads, arg{text: operand, lit: lit})
					if k == len(t)-1 {
						i++
					}
					k = len(t)
					continue
				}
				if c != 'v' {
					m.unknown("make -" + string(c))
				}
				k = len(t)
				if c != 'v' && k == len(t) && i+1 < len(args) && len(t) == 2 {
					i++
				}
			case c == 'j' || c == 'l' || c == 'O':
				k = len(t) // -j4, -j with or without a count
			case strings.IndexByte("BdeikLnpqrRsStwh", c) >= 0:
			default:
				m.unknown("make -" + string(c))
			}
		}
	}
}

var makeLong = []string{"--always-make", "--directory", "--debug", "--environment-overrides", "--eval", "--file", "--makefile",
	"--help", "--ignore-errors", "--include-dir", "--jobs", "--keep-going", "--load-average", "--check-symlink-times", "--just-print",
	"--dry-run", "--recon", "--old-file", "--assume-old", "--output-sync", "--print-data-base", "--question", "--no-builtin-rules",
	"--no-builtin-variables", "--shuffle", "--silent", "--quiet", "--no-silent", "--no-keep-going", "--stop", "--touch", "--trace",
	"--version", "--print-directory", "--no-print-directory", "--what-if", "--new-file", "--assume-new", "--warn-undefined-variables"}

// npmModel: global installs, other prefixes and configurations, script
// shells and packages from URLs ask; `npm exec` is unwrapped elsewhere.
func npmModel(m *model, name string, args []arg) {
	sub := firstOperand(args, []string{"--prefix", "-C", "--userconfig", "--globalconfig", "--cache", "--workspace", "-w", "--filter", "--dir"})
	for _, a := range args {
		t := a.text
		n, v, _ := strings.Cut(t, "=")
		switch {
		case t == "-g" || n == "--global" || n == "--location" && v == "global" || t == "--location" && false:
			m.unknown(name + " --global")
		case n == "--prefix" || n == "--userconfig" || n == "--globalconfig" || n == "--script-shell" || n == "--node-options" ||
			n == "--registry" && !strings.Contains(v, "registry.npmjs.org") || n == "--ignore-scripts=false" || n == "--dir" && name != "pnpm" || n == "--cwd" || n == "-C" && name == "pnpm":
			m.unknown(name + " " + n)
		}
	}
	switch sub {
	case "link", "unlink", "set-script", "rebuild", "explore", "edit", "token", "login", "adduser", "logout", "whoami", "star", "stars",
		"hook", "team", "org", "profile", "access", "owner", "deprecate", "dist-tag", "unpublish", "publish", "cache", "prefix-set", "dlx", "global":
		if !(sub == "cache" && len(args) > 1 && (args[1].text == "ls" || args[1].text == "verify")) {
			m.unknown(name + " " + sub)
		}
	case "config", "c":
		for _, a := range args {
			l := strings.ToLower(a.text)
			if strings.Contains(l, "auth") || strings.Contains(l, "token") || strings.Contains(l, "password") || a.text == "ls" && false {
				m.unknown(name + " config " + a.text)
			}
		}
	case "install", "i", "add", "ci", "update", "up", "upgrade":
		for _, o := range args {
			t := o.text
			if strings.Contains(t, "://") || strings.HasPrefix(t, "github:") || strings.HasPrefix(t, "git+") || strings.HasPrefix(t, "git@") ||
				strings.HasPrefix(t, "file:") || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "../") || strings.HasPrefix(t, "~") || strings.HasSuffix(t, ".tgz") {
				m.unknown(name + " " + sub + " " + t)
			}
		}
	}
}

// ghModel: gh's token and secret routes ask, and so do bodies read from
// files outside the project (as reads).
func ghModel(m *model, args []arg) {
	ops := operands(args, "RbFfHqtXpjlLaAmsSwe", "--repo", "--body", "--body-file", "--title", "--jq", "--template", "--field", "--raw-field", "--header", "--method", "--label", "--assignee", "--milestone", "--base", "--head", "--reviewer", "--limit", "--state", "--search", "--json")
	if len(ops) >= 2 && ops[0].text == "auth" && ops[1].text == "token" {
		m.unknown("gh auth token")
	}
	for _, a := range args {
		if a.text == "--show-token" || a.text == "-t" && len(ops) >= 2 && ops[0].text == "auth" {
			m.unknown("gh auth --show-token")
		}
	}
	m.reads = append(m.reads, longOrShort(args, false, "F", []string{"--body-file"}, []string{"--body-file"})...)
	if len(ops) >= 2 && ops[0].text == "repo" && !slices.Contains([]string{"view", "list", "clone"}, ops[1].text) {
		m.unknown("gh repo " + ops[1].text)
	}
	if len(ops) >= 3 && ops[0].text == "repo" && ops[1].text == "clone" {
		if len(ops) >= 4 {
			m.writes = append(m.writes, ops[3])
		} else {
			m.writes = append(m.writes, arg{text: gitCloneDir(ops[2].text), lit: ops[2].lit})
		}
	}
	if len(ops) >= 1 && (ops[0].text == "secret" || ops[0].text == "variable" || ops[0].text == "ssh-key" || ops[0].text == "gpg-key" || ops[0].text == "config" || ops[0].text == "alias" || ops[0].text == "extension" || ops[0].text == "codespace" || ops[0].text == "attestation") {
		m.unknown("gh " + ops[0].text)
	}
}

// ccModel: response files, wrappers, plugins and alternative tool
// directories run or load code the call does not show.
func ccModel(m *model, args []arg) {
	for i, a := range args {
		t := a.text
		switch {
		case strings.HasPrefix(t, "@"):
			m.unknown("cc @file")
		case t == "-wrapper" || t == "-B" || strings.HasPrefix(t, "-B") || strings.HasPrefix(t, "-fplugin") || strings.HasPrefix(t, "-specs") ||
			strings.HasPrefix(t, "--specs") || t == "-load" || strings.HasPrefix(t, "-fuse-ld=/") || strings.HasPrefix(t, "--ld-path") ||
			strings.HasPrefix(t, "-fpass-plugin") || t == "-Xclang" && i+1 < len(args) && strings.Contains(args[i+1].text, "load") ||
			strings.HasPrefix(t, "-Wl,") && strings.Contains(t, "plugin") || t == "-no-integrated-as" || strings.HasPrefix(t, "--sysroot") ||
			t == "-ccc-install-dir" || strings.HasPrefix(t, "--config") || strings.HasPrefix(t, "-fprofile-generate=/"):
			m.unknown("cc " + t)
		}
	}
}

// pytestModel: plugins, other configuration and roots ask; the base
// temporary directory (deleted and recreated) is written.
func pytestModel(m *model, args []arg) {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		n, _, _ := strings.Cut(t, "=")
		switch {
		case t == "-p" || strings.HasPrefix(t, "-p") && len(t) > 2 && !strings.HasPrefix(t, "--"):
			if !(i+1 < len(args) && strings.HasPrefix(args[i+1].text, "no:")) && !strings.HasPrefix(t, "-pno:") {
				m.unknown("pytest -p")
			}
		case t == "-c" || n == "--config-file" || n == "--rootdir" || n == "--confcutdir" || n == "--override-ini" || t == "-o" || n == "--pyargs" || n == "--import-mode":
			if !(n == "--import-mode") {
				m.unknown("pytest " + n)
			}
		case n == "--basetemp":
			m.writes = append(m.writes, longOrShort(args[i:i+min(2, len(args)-i)], false, "", []string{"--basetemp"}, []string{"--basetemp"})...)
		}
	}
}

// pipModel: installs from URLs, other indexes, other prefixes and the
// user's configuration ask.
func pipModel(m *model, args []arg) {
	sub := firstOperand(args, nil)
	switch sub {
	case "config", "uninstall", "cache":
		if sub == "cache" && len(args) > 1 && (args[1].text == "list" || args[1].text == "dir" || args[1].text == "info") {
			return
		}
		m.unknown("pip " + sub)
		return
	}
	if sub == "download" || sub == "wheel" {
		m.writes = append(m.writes, longOrShort(args, false, "dw", []string{"--dest", "--wheel-dir"}, []string{"--dest", "--wheel-dir"})...)
	}
	for i, a := range args {
		t := a.text
		n, _, _ := strings.Cut(t, "=")
		switch n {
		case "--user", "--target", "-t", "--prefix", "--root", "--index-url", "-i", "--extra-index-url", "--trusted-host", "--break-system-packages", "--src", "--config-settings", "--global-option":
			m.unknown("pip " + n)
		case "-e", "--editable":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1].text, ".") {
				m.reads = append(m.reads, args[i+1])
			}
		}
		if strings.Contains(t, "://") || strings.HasPrefix(t, "git+") {
			m.unknown("pip install " + t)
		} else if (sub == "install" || sub == "download" || sub == "wheel") && (strings.HasPrefix(t, ".") || strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~")) {
			m.reads = append(m.reads, a) // a local package: its setup code runs
		}
	}
}

// denoModel: remote modules and broad permissions ask.
func denoModel(m *model, args []arg) {
	for _, a := range args {
		t := a.text
		n, _, _ := strings.Cut(t, "=")
		switch {
		case strings.Contains(t, "://") || strings.HasPrefix(t, "jsr:") || strings.HasPrefix(t, "npm:"):
			m.unknown("deno " + t)
		case t == "-A" || n == "--allow-all" || n == "--allow-run" || n == "--allow-ffi" || n == "--env-file" || n == "--env":
			m.unknown("deno " + n)
		}
	}
	if sub := firstOperand(args, nil); sub == "install" || sub == "upgrade" || sub == "compile" {
		m.unknown("deno " + sub)
	}
}

// uvModel: uvx and tool runs fetch and run packages; other interpreters,
// system installs and env files ask.
func uvModel(m *model, name string, args []arg) {
	if name == "uvx" || name == "pipx" {
		m.unknown(name)
		return
	}
	sub := firstOperand(args, nil)
	if sub == "tool" || sub == "self" || sub == "python" && len(args) > 1 && args[1].text == "install" {
		m.unknown("uv " + sub)
	}
	for _, a := range args {
		n, _, _ := strings.Cut(a.text, "=")
		switch n {
		case "--python", "-p", "--system", "--env-file", "--index-url", "--extra-index-url", "--find-links", "--with", "--from":
			if n == "--with" || n == "--from" {
				continue
			}
			m.unknown("uv " + n)
		}
	}
}
