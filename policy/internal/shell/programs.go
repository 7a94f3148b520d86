package shell

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// invoke records one simple command and recurses into what it runs.
func (w *walker) invoke(argv []arg, wrappers, pipeline []string) error {
	if len(argv) == 0 {
		return nil
	}
	if len(w.res.Commands) >= maxShellCommands {
		return &Error{"dynamic_command", "too many commands in one command line"}
	}
	prog := argv[0]
	if !prog.lit || prog.glob {
		return &Error{"dynamic_command", fmt.Sprintf("program name %q is not a literal", prog.text)}
	}
	name := path.Base(prog.text)
	if prog.text == "" || strings.HasSuffix(prog.text, "/") || name == "." && prog.text != "." || name == ".." {
		return &Error{"dynamic_command", fmt.Sprintf("program name %q is not a command", prog.text)}
	}
	args := argv[1:]
	env := w.envFor(w.assigns)
	w.assigns = nil
	cmd := Command{
		Name:     name,
		Path:     prog.text,
		Args:     texts(args),
		Pipeline: append([]string(nil), pipeline...),
		Wrappers: append([]string(nil), wrappers...),
	}
	for _, a := range args {
		if !a.lit {
			cmd.Dynamic = true
		}
	}
	w.commandEnv(&cmd, env)
	cmd.Inline = inlineCode(name, args)
	cmd.StdinCode = w.codeOnStdin(name, args)
	reads, writes, dyn := pathArgs(name, args)
	cmd.DynamicPaths = dyn
	for _, a := range reads {
		cmd.Reads = append(cmd.Reads, w.resolve(a, false)...)
	}
	for _, a := range writes {
		cmd.Writes = append(cmd.Writes, w.resolve(a, false)...)
	}
	for _, a := range findTargets(name, args) {
		cmd.Writes = append(cmd.Writes, w.resolve(a, true)...)
	}
	mdl := programModel(name, args)
	cmd.Unmodelled = mdl.unmodelled
	cmd.Flags = mdl.flags
	for _, set := range []struct {
		dst *[]string
		as  []arg
	}{{&cmd.Reads, mdl.reads}, {&cmd.Writes, mdl.writes}} {
		l, d := lits(set.as)
		cmd.DynamicPaths = cmd.DynamicPaths || d
		for _, a := range l {
			*set.dst = append(*set.dst, w.resolve(a, false)...)
		}
	}
	if name == "xargs" || name == "parallel" {
		cmd.DynamicPaths = false // the command it runs gets the input
	}
	// A script the line itself writes and then runs is code the gate has
	// not seen: `echo … > x.sh && bash x.sh`, `./x.sh`.
	if strings.Contains(prog.text, "/") {
		// A program named by its path: the file is read (and run).
		cmd.ProgramFiles = w.resolve(prog, false)
	}
	if strings.Contains(prog.text, "/") && w.written(w.resolve(prog, false)) ||
		isShellOrInterpreter(name) && len(reads) > 0 && w.written(cmd.Reads) {
		cmd.Inline = true
	}
	// A build tool run in a directory the line itself created or fetched
	// (git clone x && cd x && make) runs code the gate has not seen.
	if buildRunner(name) && (w.fetched(w.dirs) || w.fetched(parents(cmd.Reads)) || w.wroteBuildFile()) {
		cmd.Inline = true
	}
	w.res.Commands = append(w.res.Commands, cmd)

	inner := append(append([]string(nil), wrappers...), name)
	switch name {
	case "set":
		w.setOptions(args)
		return nil
	case "source", ".":
		w.sourced(args)
		return nil
	case "cd", "pushd", "popd", "chdir":
		w.cd(name, skipOpts(args, "", nil))
		return nil
	case "npx", "bunx", "pnpx":
		// The package's program runs with the rest of the arguments.
		for i, a := range args {
			if a.text == "-c" || a.text == "--call" {
				if i+1 < len(args) {
					return w.script(args[i+1], inner, pipeline)
				}
				return nil
			}
		}
		return w.invoke(skipOpts(args, "p", []string{"--package"}), inner, pipeline)
	case "npm", "pnpm", "yarn", "bun", "uv", "poetry", "bundle", "pipx", "pdm", "hatch", "rye":
		// npm exec X, yarn exec X, bun x X, uv run X, bundle exec X.
		rest := skipOpts(args, "", nil)
		if len(rest) == 0 {
			return nil
		}
		switch rest[0].text {
		case "exec", "x", "run", "dlx":
			if rest[0].text == "run" && (name == "npm" || name == "pnpm" || name == "yarn" || name == "bun") {
				return nil // a package.json script, not a program
			}
			for i, a := range rest {
				if a.text == "-c" || a.text == "--call" || strings.HasPrefix(a.text, "--call=") {
					if v, ok := strings.CutPrefix(a.text, "--call="); ok {
						return w.script(arg{text: v, lit: a.lit}, inner, pipeline)
					}
					if i+1 < len(rest) {
						return w.script(rest[i+1], inner, pipeline)
					}
					return nil
				}
			}
			return w.invoke(skipOpts(rest[1:], "p", []string{"--package", "--with", "--from"}), inner, pipeline)
		}
		return nil
	case "sudo", "doas":
		return w.invoke(skipOpts(args, "ugCDhpRrTUt", nil), inner, pipeline)
	case "env":
		return w.env(args, inner, pipeline)
	case "xargs":
		rest := skipOpts(args, "nLIdPsEae", []string{"--max-args", "--max-lines", "--replace", "--delimiter", "--max-procs", "--max-chars", "--eof", "--arg-file"})
		if len(rest) == 0 {
			return nil
		}
		// The command gets arguments from stdin: they are unknown,
		// unless a file-listing command prints them (find … | xargs).
		if files, ok := w.listed(w.stdin.from); ok && w.stdin.text == nil {
			return w.invoke(append(rest[:len(rest):len(rest)], files...), inner, pipeline)
		}
		rest = append(rest[:len(rest):len(rest)], arg{text: "$(stdin)"})
		return w.invoke(rest, inner, pipeline)
	case "timeout":
		rest := skipOpts(args, "sk", []string{"--signal", "--kill-after"})
		if len(rest) > 0 {
			rest = rest[1:] // duration
		}
		return w.invoke(rest, inner, pipeline)
	case "nohup", "setsid", "builtin", "unbuffer", "caffeinate", "busybox", "chronic":
		return w.invoke(skipOpts(args, "", nil), inner, pipeline)
	case "exec":
		return w.invoke(skipOpts(args, "a", nil), inner, pipeline)
	case "command":
		return w.invoke(skipOpts(args, "", nil), inner, pipeline)
	case "time":
		return w.invoke(skipOpts(args, "fo", []string{"--format", "--output"}), inner, pipeline)
	case "nice":
		return w.invoke(skipOpts(args, "n", []string{"--adjustment"}), inner, pipeline)
	case "ionice":
		return w.invoke(skipOpts(args, "cnp", []string{"--class", "--classdata", "--pid"}), inner, pipeline)
	case "stdbuf":
		return w.invoke(skipOpts(args, "ioe", []string{"--input", "--output", "--error"}), inner, pipeline)
	case "chrt", "taskset":
		rest := skipOpts(args, "", nil)
		if len(rest) > 0 {
			rest = rest[1:] // priority or mask
		}
		return w.invoke(rest, inner, pipeline)
	case "flock":
		rest := skipOpts(args, "wEc", []string{"--timeout", "--conflict-exit-code", "--command"})
		for i, a := range args {
			if (a.text == "-c" || a.text == "--command") && i+1 < len(args) {
				return w.script(args[i+1], inner, pipeline)
			}
		}
		if len(rest) > 0 {
			rest = rest[1:] // lock file
		}
		return w.invoke(rest, inner, pipeline)
	case "watch":
		rest := skipOpts(args, "nd", []string{"--interval", "--differences"})
		return w.joined(rest, inner, pipeline)
	case "eval":
		return w.joined(args, inner, pipeline)
	case "trap":
		if len(args) > 0 && !strings.HasPrefix(args[0].text, "-") {
			return w.script(args[0], inner, pipeline)
		}
		return nil
	case "su", "runuser", "script", "sg":
		for i, a := range args {
			if (a.text == "-c" || a.text == "--command") && i+1 < len(args) {
				return w.script(args[i+1], inner, pipeline)
			}
			if v, ok := strings.CutPrefix(a.text, "--command="); ok {
				return w.script(arg{text: v, lit: a.lit}, inner, pipeline)
			}
		}
		return nil
	case "parallel":
		rest := skipOpts(args, "jSP", []string{"--jobs", "--sshlogin"})
		var inputs []arg
		for i, a := range rest {
			if a.text == ":::" || a.text == "::::" {
				if a.text == ":::" {
					inputs = rest[i+1:]
				}
				rest = rest[:i:i]
				break
			}
		}
		if len(rest) == 0 {
			return nil
		}
		if len(inputs) == 0 {
			inputs = []arg{{text: "$(arguments)"}}
		}
		for _, in := range inputs {
			if in.text == ":::" {
				continue
			}
			if err := w.invoke(append(rest[:len(rest):len(rest)], in), inner, pipeline); err != nil {
				return err
			}
		}
		return nil
	case "chroot":
		rest := skipOpts(args, "", []string{"--userspec", "--groups"})
		if len(rest) > 0 {
			rest = rest[1:] // new root
		}
		return w.invoke(rest, inner, pipeline)
	case "strace", "ltrace":
		return w.invoke(skipOpts(args, "oepsuEaIXPb", nil), inner, pipeline)
	case "find":
		return w.find(args, inner, pipeline)
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash":
		return w.shell(args, inner, pipeline)
	}
	return nil
}

// skipOpts drops leading options. Short options in withArg and long options
// in longWithArg (without "=value") consume the next argument. It stops at
// "--" (dropped), at the first non-option, and at a leading NAME=value
// assignment only for env (handled there).
func skipOpts(args []arg, withArg string, longWithArg []string) []arg {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			return args[i+1:]
		}
		if len(t) < 2 || t[0] != '-' {
			return args[i:]
		}
		if strings.HasPrefix(t, "--") {
			if !strings.Contains(t, "=") {
				for _, l := range longWithArg {
					if t == l {
						i++
						break
					}
				}
			}
			continue
		}
		// A short option cluster: the first option taking an argument
		// consumes the rest of the cluster or the next word.
		for j := 1; j < len(t); j++ {
			if strings.IndexByte(withArg, t[j]) >= 0 {
				if j == len(t)-1 {
					i++
				}
				break
			}
		}
	}
	return nil
}

func (w *walker) env(args []arg, inner, pipeline []string) error {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		chdir := func(a arg) error {
			saved := w.dirs
			defer func() { w.dirs = saved }()
			w.dirs = w.chdir(a)
			return w.env(args[i+1:], inner, pipeline)
		}
		switch {
		case t == "--":
			return w.invoke(w.skipAssigns(args[i+1:]), inner, pipeline)
		case t == "-S" || t == "--split-string":
			if i+1 < len(args) {
				return w.script(args[i+1], inner, pipeline)
			}
			return nil
		case strings.HasPrefix(t, "-S"):
			return w.script(arg{text: t[2:], lit: args[i].lit}, inner, pipeline)
		case strings.HasPrefix(t, "--split-string="):
			return w.script(arg{text: strings.TrimPrefix(t, "--split-string="), lit: args[i].lit}, inner, pipeline)
		case t == "-C" || t == "--chdir":
			if i+1 >= len(args) {
				return nil
			}
			i++
			return chdir(args[i])
		case strings.HasPrefix(t, "--chdir="):
			return chdir(arg{text: strings.TrimPrefix(t, "--chdir="), lit: args[i].lit})
		case strings.HasPrefix(t, "-C") && !strings.HasPrefix(t, "--"):
			return chdir(arg{text: t[2:], lit: args[i].lit})
		case t == "-u" || t == "--unset":
			i++
		case len(t) > 1 && t[0] == '-':
		default:
			return w.invoke(w.skipAssigns(args[i:]), inner, pipeline)
		}
	}
	return nil
}

func (w *walker) skipAssigns(args []arg) []arg {
	for len(args) > 0 {
		name, val, ok := strings.Cut(args[0].text, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/ ") {
			break
		}
		w.assigns = append(w.assigns, envVar{name: name, val: arg{text: val, lit: args[0].lit}, hasVal: true})
		args = args[1:]
	}
	return args
}

// script parses a literal shell string run by a wrapper.
func (w *walker) script(a arg, inner, pipeline []string) error {
	if !a.lit {
		return &Error{"dynamic_command", fmt.Sprintf("shell code %q is not a literal", a.text)}
	}
	return w.parse(a.text, inner, pipeline)
}

// joined parses the words of eval or watch joined by spaces.
func (w *walker) joined(args []arg, inner, pipeline []string) error {
	if len(args) == 0 {
		return nil
	}
	var parts []string
	for _, a := range args {
		if !a.lit {
			return &Error{"dynamic_command", fmt.Sprintf("shell code %q is not a literal", a.text)}
		}
		parts = append(parts, a.text)
	}
	return w.parse(strings.Join(parts, " "), inner, pipeline)
}

// shell handles bash/sh/zsh: `-c STRING` is parsed recursively, and so
// is a literal program on standard input (a here-document, `echo … |`).
func (w *walker) shell(args []arg, inner, pipeline []string) error {
	hasC := false
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "--" || t == "-":
			if hasC && t == "--" && i+1 < len(args) {
				return w.script(args[i+1], inner, pipeline)
			}
			i = len(args)
		case t == "-o" || t == "+o" || t == "-O" || t == "+O" || t == "--rcfile" || t == "--init-file":
			i++
		case strings.HasPrefix(t, "--"):
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			if strings.ContainsRune(t[1:], 'c') {
				hasC = true
			}
		default:
			if hasC {
				return w.script(args[i], inner, pipeline)
			}
			if !slices.ContainsFunc(args[:i], func(a arg) bool { return a.text == "-s" }) {
				return nil // a script file, read as a path argument
			}
			i = len(args)
		}
	}
	if hasC {
		return nil
	}
	// The shell reads its commands from standard input.
	switch {
	case w.stdin.doc != nil:
		doc := w.stdin.doc
		w.stdin = stdinSrc{}
		return w.script(w.word(doc), inner, pipeline)
	case w.stdin.text != nil && w.stdin.text.lit:
		text := *w.stdin.text
		w.stdin = stdinSrc{pipe: true}
		return w.script(text, inner, pipeline)
	}
	return nil
}

// cd models cd, pushd and popd: the directories the next commands run in.
func (w *walker) cd(name string, ops []arg) {
	var dirs []string
	switch {
	case name == "popd":
		if n := len(w.stack); n > 0 {
			dirs, w.stack = w.stack[n-1], w.stack[:n-1]
		} else {
			dirs = []string{unknownDir}
		}
	case len(ops) == 0:
		dirs = w.chdir(arg{text: "~", lit: true})
	default:
		dirs = w.chdir(ops[0])
	}
	if name == "pushd" {
		w.stack = append(w.stack, w.dirs)
	}
	certain := len(dirs) > 0
	for _, d := range dirs {
		certain = certain && d != unknownDir && dirExists(d)
	}
	if w.onCd != nil {
		w.onCd(dirs, certain)
	}
}

// chdir returns the directories `cd a` may change into from w.dirs.
func (w *walker) chdir(a arg) []string {
	switch {
	case !a.lit || a.glob || a.text == "-":
		return []string{unknownDir}
	case w.cdpath && !strings.HasPrefix(a.text, "/") && !strings.HasPrefix(a.text, ".") && !strings.HasPrefix(a.text, "~"):
		return []string{unknownDir}
	}
	// bash's cd is logical: "dir/.." is dir's parent as text.
	dirs := w.resolve(a, false)
	for i, d := range dirs {
		if d != unknownDir && strings.HasPrefix(d, "/") {
			dirs[i] = filepath.Clean(d)
		}
	}
	return dirs
}

// codeOnStdin reports a shell, interpreter or source whose program comes
// from its input or a substitution rather than a file: `curl … | sh`,
// `python3 - <<EOF`, `bash <(curl …)`, `source <(…)`, `… | tee >(sh)`.
// Shells parse literal here-documents instead.
func (w *walker) codeOnStdin(name string, args []arg) bool {
	fromInput := w.stdin.pipe || w.stdin.doc != nil
	if name == "source" || name == "." {
		if len(args) == 0 {
			return false
		}
		// The first argument is the file sourced; one that is not a
		// literal could be anything.
		a := args[0]
		return !a.lit || fromInput && (a.text == "/dev/stdin" || a.text == "-")
	}
	shell := false
	switch strings.TrimRight(name, "0123456789.") {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash":
		shell = true
	case "python", "pypy", "node", "nodejs", "perl", "ruby", "php", "lua", "bun", "deno", "osascript", "Rscript", "irb":
	default:
		return false
	}
	for _, a := range args {
		if a.text == "-c" && shell {
			return false
		}
		if !a.lit {
			return true // a script from a substitution
		}
		if a.text == "-" || a.text == "/dev/stdin" {
			break
		}
		if len(a.text) > 1 && (a.text[0] == '-' || a.text[0] == '+') {
			continue
		}
		return false // a script file
	}
	if shell {
		return w.stdin.pipe && (w.stdin.text == nil || !w.stdin.text.lit)
	}
	return fromInput
}

// find handles -exec/-execdir/-ok/-okdir COMMAND ... ; or +. The {}
// placeholder stands for the files find selects: "<start>/<-name pattern>"
// at any depth, or every file under each start path.
func (w *walker) find(args []arg, inner, pipeline []string) error {
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			var argv []arg
			for k, a := range args[i+1 : j] {
				if k > 0 && strings.Contains(a.text, "{}") {
					for _, s := range findSelected(args) {
						argv = append(argv, arg{text: strings.ReplaceAll(a.text, "{}", s.text), lit: a.lit && s.lit, glob: true, deep: true})
					}
					continue
				}
				argv = append(argv, a)
			}
			if err := w.invoke(argv, inner, pipeline); err != nil {
				return err
			}
			i = j
		}
	}
	return nil
}

// findStarts returns find's start paths ("." when none).
func findStarts(args []arg) []arg {
	var starts []arg
	for _, a := range args {
		if strings.HasPrefix(a.text, "-") || a.text == "(" || a.text == "!" {
			break
		}
		starts = append(starts, a)
	}
	if len(starts) == 0 {
		starts = []arg{{text: ".", lit: true}}
	}
	return starts
}

// findSelected returns the files find selects, as patterns under each
// start path: its -name and -iname patterns, or "*".
func findSelected(args []arg) []arg {
	var names []arg
	for i := 0; i+1 < len(args); i++ {
		switch args[i].text {
		case "-name", "-iname":
			names = append(names, args[i+1])
		case "-path", "-ipath", "-wholename", "-regex", "-iregex":
			names = append(names, arg{text: "*", lit: true}) // any name
		}
	}
	if len(names) == 0 {
		names = []arg{{text: "*", lit: true}}
	}
	var out []arg
	for _, s := range findStarts(args) {
		for _, n := range names {
			out = append(out, arg{text: strings.TrimSuffix(s.text, "/") + "/" + n.text, lit: s.lit && n.lit, glob: true, deep: true})
		}
	}
	return out
}

// findTargets returns what find deletes (-delete) as patterns under each
// start path, matched at any depth; without a -name test, the start paths
// themselves.
func findTargets(name string, args []arg) []arg {
	if name != "find" || !slices.ContainsFunc(args, func(a arg) bool { return a.text == "-delete" }) {
		return nil
	}
	return findSelected(args)
}

// inlineCode reports interpreters given code on the command line, and
// programs whose options or arguments run commands.
func inlineCode(name string, args []arg) bool {
	var flags []string
	switch strings.TrimRight(name, "0123456789.") {
	case "python", "pypy", "python-m":
		flags = []string{"-c"}
	case "node", "nodejs", "bun":
		// -r/--require/--import load a module file (read as a path);
		// a data: or remote URL there is inline code.
		for i, a := range args {
			n, v, _ := strings.Cut(a.text, "=")
			if (n == "-r" || n == "--require" || n == "--import" || n == "--loader" || n == "--experimental-loader") && v == "" && i+1 < len(args) {
				v = args[i+1].text
			}
			if (n == "-r" || n == "--require" || n == "--import" || n == "--loader" || n == "--experimental-loader") && (strings.Contains(v, ":") && !strings.HasPrefix(v, "node:") || v == "") {
				return true
			}
		}
		flags = []string{"-e", "--eval", "-p", "--print"}
	case "perl", "ruby", "lua", "osascript":
		flags = []string{"-e", "-E"}
	case "php":
		flags = []string{"-r"}
	case "deno":
		return len(args) > 0 && args[0].text == "eval"
	case "awk", "gawk", "mawk", "nawk", "busybox-awk":
		prog, ok := awkProgram(args)
		if !ok {
			return false // a program file: read as a path
		}
		_, code := awkScript(prog)
		return code
	case "sed", "gsed":
		for _, s := range sedScripts(args) {
			if !s.lit {
				return true
			}
			if _, _, code := sedScript(s.text); code {
				return true
			}
		}
		return slices.ContainsFunc(args, func(a arg) bool { return a.text == "-f" || strings.HasPrefix(a.text, "--file") })
	case "make", "gmake":
		for i, a := range args {
			t := a.text
			if t == "-E" || strings.HasPrefix(t, "--eval") || strings.HasPrefix(t, "SHELL=") || strings.HasPrefix(t, ".SHELLFLAGS=") ||
				(t == "-f" || t == "--file" || t == "--makefile") && i+1 < len(args) && (args[i+1].text == "-" || strings.HasPrefix(args[i+1].text, "/dev/") || !args[i+1].lit) {
				return true
			}
		}
		return false
	case "go":
		return slices.ContainsFunc(args, func(a arg) bool {
			return a.text == "-exec" || a.text == "-toolexec" || strings.HasPrefix(a.text, "-exec=") || strings.HasPrefix(a.text, "-toolexec=") ||
				a.text == "--exec" || a.text == "--toolexec"
		})
	case "cargo":
		return slices.ContainsFunc(args, func(a arg) bool { return a.text == "--config" || strings.HasPrefix(a.text, "--config=") })
	case "git":
		for i, a := range args {
			t := a.text
			switch {
			case t == "--exec" || t == "-x" && slices.ContainsFunc(args[:i], func(a arg) bool { return a.text == "rebase" }) || strings.HasPrefix(t, "--exec=") || t == "--extcmd" || strings.HasPrefix(t, "--extcmd=") ||
				strings.HasPrefix(t, "--config-env") || strings.HasPrefix(t, "--upload-pack") || strings.HasPrefix(t, "--receive-pack") ||
				t == "-u" && i > 0 && args[0].text == "clone":
				return true
			case t == "foreach" || t == "run" && i > 0 && args[0].text == "bisect" || t == "filter-branch" || t == "filter-repo":
				return true
			}
		}
		return false
	default:
		// Options of other programs that run a command.
		for _, a := range args {
			t := a.text
			switch {
			case strings.Contains(t, "ProxyCommand"), strings.Contains(t, "LocalCommand"),
				strings.HasPrefix(t, "--to-command"), strings.HasPrefix(t, "--checkpoint-action"),
				strings.HasPrefix(t, "--use-compress-program"), strings.HasPrefix(t, "--rsh"),
				strings.HasPrefix(t, "--upload-pack"), strings.HasPrefix(t, "--receive-pack"),
				strings.HasPrefix(t, "--unzip-command"), t == "-TT",
				strings.HasPrefix(t, "--info-script"), strings.HasPrefix(t, "--new-volume-script"),
				name == "tar" && (t == "-I" || t == "-F"), name == "rsync" && t == "-e", name == "zip" && t == "-TT":
				return true
			}
		}
		return false
	}
	for _, a := range args {
		for _, f := range flags {
			if a.text == f || (len(f) == 2 && strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text[1:], rune(f[1]))) || strings.HasPrefix(a.text, f+"=") {
				return true
			}
		}
	}
	return false
}

// operands returns the non-option arguments, stopping option parsing at
// "--"; "-" and URLs are left out. Options in withArg (short letters) and
// longWithArg consume their value.
func operands(args []arg, withArg string, longWithArg ...string) []arg {
	var out []arg
	opts := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if opts && t == "--" {
			opts = false
			continue
		}
		if opts && len(t) > 1 && t[0] == '-' {
			if strings.HasPrefix(t, "--") {
				if !strings.Contains(t, "=") && slices.Contains(longWithArg, t) {
					i++
				}
			} else if j := strings.IndexAny(t[1:], withArg); withArg != "" && j == len(t)-2 {
				i++
			}
			continue
		}
		if t == "-" || t == "" || strings.Contains(t, "://") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// optValues returns the values of an option: "-o V", "-oV", "--output V",
// "--output=V", and the last letter of a short cluster ("-sSLo V").
func optValues(args []arg, short string, long ...string) []arg {
	var out []arg
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			break
		}
		next := func() {
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
		}
		switch {
		case strings.HasPrefix(t, "--"):
			for _, l := range long {
				if t == l {
					next()
				} else if v, ok := strings.CutPrefix(t, l+"="); ok {
					out = append(out, arg{text: v, lit: args[i].lit, glob: args[i].glob})
				}
			}
		case len(t) > 1 && t[0] == '-' && short != "":
			for j := 1; j < len(t); j++ {
				if strings.IndexByte(short, t[j]) < 0 {
					continue
				}
				if j == len(t)-1 {
					next()
				} else {
					out = append(out, arg{text: t[j+1:], lit: args[i].lit, glob: args[i].glob})
				}
				break
			}
		}
	}
	return out
}

func lits(as []arg) (out []arg, dynamic bool) {
	for _, a := range as {
		if a.proc {
			continue
		}
		if a.lit {
			out = append(out, a)
		} else {
			dynamic = true
		}
	}
	return out, dynamic
}

// under joins a relative path argument to a directory argument (-C DIR).
func under(dir, a arg) arg {
	if strings.HasPrefix(a.text, "/") || strings.HasPrefix(a.text, "~") {
		return a
	}
	return arg{text: path.Join(dir.text, a.text), lit: dir.lit && a.lit, glob: dir.glob || a.glob}
}

func isEnvTemplate(name string) bool {
	switch path.Base(name) {
	case ".env.example", ".env.sample", ".env.template", ".env.dist":
		return true
	}
	return false
}

// pathArgs returns the files a well-known program reads and writes, and
// whether a file argument is only known at run time.
func pathArgs(name string, args []arg) (reads, writes []arg, dynamic bool) {
	add := func(dst *[]arg, as []arg) {
		l, d := lits(as)
		*dst = append(*dst, l...)
		dynamic = dynamic || d
	}
	switch name {
	case "rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "tee", "mkfifo", "wipe", "srm":
		add(&writes, operands(args, "s", "--size", "--reference"))
	case "chmod", "chown", "chgrp":
		if ops := operands(args, "", "--reference"); len(ops) > 0 {
			add(&writes, ops[1:])
		}
	case "cp", "mv", "ln", "install", "rsync", "scp":
		ops := operands(args, "tSmogbe", "--target-directory", "--suffix", "--mode", "--owner", "--group", "--rsh")
		targets := optValues(args, "t", "--target-directory")
		if len(targets) == 0 && len(ops) > 0 {
			targets, ops = ops[len(ops)-1:], ops[:len(ops)-1]
		}
		if name == "ln" && len(targets) > 0 && slices.ContainsFunc(args, func(a arg) bool {
			return a.text == "-s" || a.text == "--symbolic" || strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text, 's')
		}) {
			// A relative symlink target is relative to the link's directory.
			for i, o := range ops {
				ops[i] = under(arg{text: path.Dir(targets[0].text), lit: targets[0].lit}, o)
			}
		}
		add(&reads, ops)
		if name == "cp" && len(ops) > 0 && !slices.ContainsFunc(ops, func(a arg) bool { return !isEnvTemplate(a.text) }) {
			// cp .env.example .env: a template, not a secret, is copied.
			for _, t := range targets {
				if !strings.HasPrefix(path.Base(t.text), ".env") {
					add(&writes, []arg{t})
				}
			}
			break
		}
		if name == "mv" {
			add(&writes, ops) // moved away
		}
		add(&writes, targets)
	case "dd":
		for _, o := range args {
			if v, ok := strings.CutPrefix(o.text, "of="); ok {
				add(&writes, []arg{{text: v, lit: o.lit, glob: o.glob}})
			} else if v, ok := strings.CutPrefix(o.text, "if="); ok {
				add(&reads, []arg{{text: v, lit: o.lit, glob: o.glob}})
			}
		}
	case "sed", "gsed":
		files := operands(args, "efl", "--expression", "--file", "--line-length")
		if len(sedScripts(args)) == 0 || !slices.ContainsFunc(args, func(a arg) bool { return a.text == "-e" || strings.HasPrefix(a.text, "--expression") }) {
			if len(files) > 0 {
				files = files[1:] // the script
			}
		}
		inPlace := slices.ContainsFunc(args, func(a arg) bool {
			return strings.HasPrefix(a.text, "--in-place") || strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text, 'i')
		})
		if inPlace {
			add(&writes, files)
		} else {
			add(&reads, files)
		}
		for _, s := range sedScripts(args) {
			r, wr, _ := sedScript(s.text)
			for _, p := range r {
				reads = append(reads, arg{text: p, lit: s.lit})
			}
			for _, p := range wr {
				writes = append(writes, arg{text: p, lit: s.lit})
			}
		}
		add(&reads, optValues(args, "f", "--file"))
	case "perl":
		ops := operands(args, "eEIMm")
		if slices.ContainsFunc(args, func(a arg) bool {
			return strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text, 'i')
		}) {
			add(&writes, ops)
		} else {
			add(&reads, ops)
		}
	case "awk", "gawk", "mawk", "nawk":
		ops := operands(args, "Fvf", "--field-separator", "--assign", "--file")
		if _, ok := awkProgram(args); ok && len(ops) > 0 {
			ops = ops[1:]
		}
		add(&reads, ops)
		add(&reads, optValues(args, "f", "--file"))
		if prog, ok := awkProgram(args); ok && prog.lit {
			files, _ := awkScript(prog)
			for _, p := range files {
				writes = append(writes, arg{text: p, lit: true})
			}
		}
	case "cat", "head", "tail", "less", "more", "bat", "tac", "nl", "od", "xxd", "hexdump", "strings",
		"base64", "base32", "source", ".", "diff", "cmp", "wc", "uniq", "md5sum", "sha256sum", "sha1sum", "sha512sum", "cksum",
		"file", "stat", "cut", "paste", "comm", "column", "fold", "rev", "tr", "expand", "unexpand", "fmt", "pr", "split",
		"iconv", "shasum", "b2sum", "vim", "vi", "nano", "emacs", "view", "zcat", "bzcat", "xzcat", "gzip", "gunzip",
		"bzip2", "xz", "zstd", "lz4", "openssl", "gpg":
		withArg := map[string]string{
			"head": "nc", "tail": "ncs", "cut": "dfcb", "fold": "w", "od": "AjNtw", "xxd": "cglos", "split": "bln",
			"base64": "w", "nl": "bdfhilnsvw", "column": "cstoNl", "diff": "CUxXIL", "hexdump": "efns", "strings": "nt",
			"pr": "lwo", "stat": "c", "file": "fmeP", "openssl": "", "gpg": "o",
		}[name]
		add(&reads, operands(args, withArg, "--bytes", "--lines", "--delimiter", "--fields", "--characters", "--format"))
		if name == "file" {
			add(&reads, optValues(args, "f", "--files-from"))
		}
		if name == "openssl" || name == "gpg" {
			add(&reads, optValues(args, "", "-in", "--input"))
			add(&writes, optValues(args, "o", "-out", "--output"))
		}
	case "sort":
		add(&reads, operands(args, "otkSTy", "--output", "--key", "--field-separator", "--buffer-size", "--temporary-directory"))
		add(&writes, optValues(args, "o", "--output"))
	case "grep", "egrep", "fgrep", "rg", "ag", "ack", "jq", "yq", "git-grep":
		withArg := "efmABCdDgtTM"
		if name == "jq" || name == "yq" {
			withArg = ""
		}
		ops := operands(args, withArg, "--regexp", "--file", "--max-count", "--after-context", "--before-context",
			"--context", "--glob", "--iglob", "--type", "--include", "--exclude", "--arg", "--argjson", "--slurpfile", "--rawfile")
		explicit := slices.ContainsFunc(args, func(a arg) bool {
			return a.text == "-e" || a.text == "-f" || strings.HasPrefix(a.text, "--regexp") || strings.HasPrefix(a.text, "--file")
		})
		if !explicit && len(ops) > 0 {
			ops = ops[1:] // the pattern or jq filter
		}
		add(&reads, ops)
		add(&reads, optValues(args, "f", "--file", "--slurpfile", "--rawfile"))
		// Include globs name the files searched under each root.
		roots := ops
		if len(roots) == 0 {
			roots = []arg{{text: ".", lit: true}}
		}
		for _, g := range optValues(args, "g", "--include", "--glob", "--iglob") {
			for _, r := range roots {
				x := under(r, arg{text: strings.TrimPrefix(g.text, "!"), lit: g.lit, glob: true})
				x.deep = true
				add(&reads, []arg{x})
			}
		}
	case "find":
		add(&reads, findStarts(args))
		for i, a := range args {
			switch a.text {
			case "-fprint", "-fprint0", "-fprintf", "-fls":
				if i+1 < len(args) {
					add(&writes, args[i+1:i+2])
				}
			}
		}
	case "bash", "sh", "zsh", "dash", "ksh", "python", "python3", "node", "ruby":
		// A script file argument is read.
		if len(args) > 0 && !strings.HasPrefix(args[0].text, "-") {
			add(&reads, args[:1])
		}
	case "curl":
		add(&writes, optValues(args, "ocD", "--output", "--cookie-jar", "--dump-header", "--trace", "--trace-ascii", "--stderr"))
		add(&reads, optValues(args, "TKb", "--upload-file", "--config", "--cookie"))
		for _, d := range optValues(args, "dF", "--data", "--data-binary", "--data-raw", "--data-ascii", "--data-urlencode", "--form", "--form-string", "--json") {
			// @file and <file name uploads; --data-urlencode name@file too.
			t := d.text
			if i := strings.IndexAny(t, "@<"); i >= 0 {
				f := t[i+1:]
				if j := strings.IndexByte(f, ';'); j >= 0 {
					f = f[:j]
				}
				if f != "-" && f != "" {
					add(&reads, []arg{{text: f, lit: d.lit, glob: d.glob}})
				}
			}
		}
	case "wget":
		add(&writes, optValues(args, "Oo", "--output-document", "--output-file", "--append-output"))
		for _, d := range optValues(args, "P", "--directory-prefix") {
			add(&writes, []arg{under(d, arg{text: "*", lit: true})})
		}
		add(&reads, optValues(args, "i", "--post-file", "--body-file", "--input-file", "--load-cookies", "--certificate", "--private-key"))
	case "tar", "bsdtar", "gtar":
		r, wr, d := tarPaths(args)
		add(&reads, r)
		add(&writes, wr)
		dynamic = dynamic || d
	case "unzip":
		ops := operands(args, "dx", "")
		dir := arg{text: ".", lit: true}
		if d := optValues(args, "d", ""); len(d) > 0 {
			dir = d[0]
		}
		if len(ops) > 0 {
			add(&reads, ops[:1])
		}
		add(&writes, []arg{under(dir, arg{text: "*", lit: true})})
	case "zip":
		ops := operands(args, "bntx", "")
		if len(ops) > 0 {
			add(&writes, ops[:1])
			add(&reads, ops[1:])
		}
	case "patch":
		add(&writes, optValues(args, "do", "--directory", "--output"))
		for _, d := range optValues(args, "d", "--directory") {
			add(&writes, []arg{under(d, arg{text: "*", lit: true})})
		}
		ops := operands(args, "dopiBrFDVYz", "--directory", "--output", "--input")
		if len(ops) > 0 {
			add(&writes, ops[:1])
			add(&reads, ops[1:])
		}
		add(&reads, optValues(args, "i", "--input"))
	case "go", "gcc", "g++", "cc", "clang", "clang++", "swiftc", "rustc", "javac", "tsc", "esbuild":
		for _, o := range operands(args, "o", "") {
			if o.lit && (strings.Contains(o.text, "/") || o.text[0] == '.' || o.text[0] == '~') {
				reads = append(reads, o)
			}
		}
		if name != "go" { // go's single-dash long flags: see goModel
			add(&writes, optValues(args, "o", ""))
		}
		for _, a := range args {
			if v, ok := strings.CutPrefix(a.text, "-o="); ok {
				add(&writes, []arg{{text: v, lit: a.lit, glob: a.glob}})
			}
		}
	case "git":
		r, wr, d := gitPaths(args)
		add(&reads, r)
		add(&writes, wr)
		dynamic = dynamic || d
	case "xargs":
		// Its input names files for the command it runs; see invoke.
	case "echo", "printf", "cd", "pushd", "popd", ":", "true", "false", "test", "[", "[[", "export", "set", "unset",
		"make", "npm", "npx", "pnpm", "yarn", "cargo", "docker", "kubectl", "gh", "pytest", "sleep", "date", "seq", "which",
		"type", "command", "exit", "return", "wait", "kill", "ls", "tree", "du", "mktemp", "basename", "dirname", "realpath", "readlink",
		"pip", "pip3", "uv", "poetry", "env", "sudo", "timeout", "nice", "nohup", "time", "exec", "eval", "ps", "pgrep":
		// Operands are names, options or other programs' arguments.
		if name == "ls" || name == "tree" || name == "du" || name == "readlink" || name == "realpath" {
			// They read names and sizes, not contents: a glob stands
			// for its directory (du -sh * is the working directory).
			l, _ := lits(operands(args, "IPLw", "--ignore", "--hide"))
			for _, a := range l {
				if a.glob {
					if i := strings.IndexAny(a.text, "*?["); i >= 0 {
						a = arg{text: path.Dir(a.text[:i] + "x"), lit: true}
					}
				}
				reads = append(reads, a)
			}
		}
	default:
		// Any other program: operands that look like paths are read.
		for _, o := range operands(args, "", "") {
			if o.lit && (strings.Contains(o.text, "/") || o.text[0] == '.' || o.text[0] == '~') {
				reads = append(reads, o)
			}
		}
	}
	return reads, writes, dynamic
}

// tarPaths: tar c reads its operands and writes the archive, tar x and
// tar t read it; x writes into -C DIR (or the working directory).
func tarPaths(args []arg) (reads, writes []arg, dynamic bool) {
	mode := byte(0)
	var archive []arg
	dir := arg{text: ".", lit: true}
	var ops []arg
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(t, "--directory="):
			dir = arg{text: strings.TrimPrefix(t, "--directory="), lit: args[i].lit}
		case t == "--directory" || t == "-C":
			if i+1 < len(args) {
				dir = args[i+1]
				i++
			}
		case strings.HasPrefix(t, "--file="):
			archive = append(archive, arg{text: strings.TrimPrefix(t, "--file="), lit: args[i].lit})
		case t == "--file":
			if i+1 < len(args) {
				archive = append(archive, args[i+1])
				i++
			}
		case t == "--extract" || t == "--get":
			mode = 'x'
		case t == "--create" || t == "--append" || t == "--update":
			mode = 'c'
		case strings.HasPrefix(t, "--"):
		case strings.HasPrefix(t, "-") || i == 0 && !strings.Contains(t, "/") && !strings.Contains(t, "."):
			// An option cluster, or the old-style first word ("czf").
			letters := strings.TrimPrefix(t, "-")
			for j := 0; j < len(letters); j++ {
				switch c := letters[j]; c {
				case 'c', 'r', 'u':
					mode = 'c'
				case 'x':
					mode = 'x'
				case 't':
					if mode == 0 {
						mode = 't'
					}
				case 'f', 'C':
					v := letters[j+1:]
					if v == "" && i+1 < len(args) {
						i++
						if c == 'f' {
							archive = append(archive, args[i])
						} else {
							dir = args[i]
						}
					} else if v != "" {
						if c == 'f' {
							archive = append(archive, arg{text: v, lit: args[i].lit})
						} else {
							dir = arg{text: v, lit: args[i].lit}
						}
					}
					j = len(letters)
				}
			}
		default:
			ops = append(ops, args[i])
		}
	}
	for _, a := range archive {
		if !a.lit {
			dynamic = true
		} else if a.text != "-" {
			if mode == 'c' {
				writes = append(writes, a)
			} else {
				reads = append(reads, a)
			}
		}
	}
	switch mode {
	case 'c':
		for _, o := range ops {
			if !o.lit {
				dynamic = true
				continue
			}
			reads = append(reads, under(dir, o))
		}
	case 'x':
		if !dir.lit {
			dynamic = true
		}
		writes = append(writes, under(dir, arg{text: "*", lit: true}))
	}
	return reads, writes, dynamic
}

// gitPaths returns the files of the work tree a git command reads or
// writes: pathspecs, REV:PATH blobs, --work-tree, -C.
func gitPaths(args []arg) (reads, writes []arg, dynamic bool) {
	dir := arg{text: ".", lit: true}
	i := 0
	for ; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-C" && i+1 < len(args):
			dir = under(dir, args[i+1])
			i++
		case t == "-c" || t == "--git-dir" || t == "--namespace":
			i++
		case t == "--work-tree" && i+1 < len(args):
			writes = append(writes, args[i+1])
			dir = args[i+1]
			i++
		case strings.HasPrefix(t, "--work-tree="):
			wt := arg{text: strings.TrimPrefix(t, "--work-tree="), lit: args[i].lit}
			writes = append(writes, wt)
			dir = wt
		case strings.HasPrefix(t, "-"):
		default:
			goto sub
		}
	}
	return reads, writes, dynamic
sub:
	sub, rest := args[i].text, args[i+1:]
	var ops []arg
	afterDashes := false
	var specs []arg
	for j, a := range rest {
		if a.text == "--" && !afterDashes {
			afterDashes = true
			specs = rest[j+1:]
			break
		}
		if !strings.HasPrefix(a.text, "-") {
			ops = append(ops, a)
		}
	}
	rel := func(as []arg) []arg {
		var out []arg
		for _, a := range as {
			if !a.lit {
				dynamic = true
				continue
			}
			out = append(out, under(dir, a))
		}
		return out
	}
	// Blobs named REV:PATH or :PATH are read.
	for _, a := range ops {
		if j := strings.IndexByte(a.text, ':'); j >= 0 && !strings.Contains(a.text, "://") && j+1 < len(a.text) {
			p := a.text[j+1:]
			// :N:PATH names PATH at stage N of the index.
			if j == 0 && len(p) > 2 && p[0] >= '0' && p[0] <= '3' && p[1] == ':' {
				p = p[2:]
			}
			reads = append(reads, rel([]arg{{text: p, lit: a.lit}})...)
		}
	}
	switch sub {
	case "checkout", "restore", "rm", "mv", "clean", "reset", "stash":
		if afterDashes {
			writes = append(writes, rel(specs)...)
		} else if sub == "rm" || sub == "mv" || sub == "restore" || sub == "checkout" && len(ops) == 1 && ops[0].text == "." {
			writes = append(writes, rel(ops)...)
		}
	case "add", "diff", "log", "blame", "grep", "show", "archive", "annotate", "cat-file", "hash-object", "apply", "am":
		if afterDashes {
			reads = append(reads, rel(specs)...)
		}
		if sub == "blame" || sub == "annotate" || sub == "add" || sub == "hash-object" || sub == "apply" || sub == "am" ||
			sub == "diff" && slices.ContainsFunc(rest, func(a arg) bool { return a.text == "--no-index" }) {
			reads = append(reads, rel(ops)...)
		}
		if sub == "archive" {
			writes = append(writes, optValues(rest, "o", "--output")...)
			if len(ops) > 1 {
				reads = append(reads, rel(ops[1:])...)
			}
		}
	case "bundle", "format-patch":
		writes = append(writes, optValues(rest, "o", "--output-directory")...)
	}
	return reads, writes, dynamic
}

// sedScripts returns sed's scripts: each -e/--expression value, or the
// first operand.
func sedScripts(args []arg) []arg {
	if es := optValues(args, "e", "--expression"); len(es) > 0 {
		return es
	}
	if slices.ContainsFunc(args, func(a arg) bool { return a.text == "-f" || strings.HasPrefix(a.text, "--file") }) {
		return nil
	}
	if ops := operands(args, "l", "--line-length"); len(ops) > 0 {
		return ops[:1]
	}
	return nil
}

// sedScript scans a sed script for the files it reads (r, R) and writes
// (w, W, the w flag of s) and for code it runs (e, the e flag of s). A
// script it cannot follow is taken as running code.
func sedScript(s string) (reads, writes []string, code bool) {
	i := 0
	rest := func() string { // to the end of the line
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			j = len(s) - i
		}
		v := strings.TrimSpace(s[i : i+j])
		i += j
		return v
	}
	skipDelimited := func(n int) bool { // n delimited fields after the delimiter
		if i >= len(s) {
			return false
		}
		d := s[i]
		i++
		for ; n > 0; n-- {
			for i < len(s) && s[i] != d {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return false
			}
			i++
		}
		return true
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!' || c == ',':
			i++
		case c >= '0' && c <= '9' || c == '$' || c == '~' || c == '+':
			i++
		case c == '/' || c == '\\':
			if c == '\\' {
				i++
			}
			if !skipDelimited(1) {
				return nil, nil, true
			}
			if i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == 's':
			i++
			if !skipDelimited(2) {
				return nil, nil, true
			}
			for i < len(s) && strings.IndexByte("gpIiMm0123456789ew", s[i]) >= 0 {
				switch s[i] {
				case 'e':
					code = true
				case 'w':
					i++
					writes = append(writes, rest())
					continue
				}
				i++
			}
		case c == 'y':
			i++
			if !skipDelimited(2) {
				return nil, nil, true
			}
		case c == 'e':
			return reads, writes, true
		case c == 'w' || c == 'W':
			i++
			writes = append(writes, rest())
		case c == 'r' || c == 'R':
			i++
			reads = append(reads, rest())
		case c == 'a' || c == 'i' || c == 'c' || c == ':' || c == 'b' || c == 't' || c == 'T' || c == '#':
			i++
			rest()
		case strings.IndexByte("pPdDnNgGhHxlqQz=F", c) >= 0:
			i++
		default:
			return nil, nil, true
		}
	}
	return reads, writes, code
}

// awkProgram returns awk's program text; ok is false for -f programs.
func awkProgram(args []arg) (prog arg, ok bool) {
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "-f" || strings.HasPrefix(t, "--file") || t == "-E" || strings.HasPrefix(t, "--exec"):
			return arg{}, false
		case t == "-F" || t == "-v" || t == "--field-separator" || t == "--assign":
			i++
		case t == "--":
			if i+1 < len(args) {
				return args[i+1], true
			}
			return arg{}, false
		case strings.HasPrefix(t, "-") && len(t) > 1:
		default:
			return args[i], true
		}
	}
	return arg{}, false
}

// awkScript scans an awk program for output redirections to files and for
// commands it runs (system(), pipes, getline from a command). A
// redirection to anything but a string literal counts as code.
func awkScript(p arg) (writes []string, code bool) {
	if !p.lit {
		return nil, true
	}
	s := p.text
	inStr, inRe := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case inRe:
			if c == '\\' {
				i++
			} else if c == '/' {
				inRe = false
			}
		case c == '"':
			inStr = true
		case c == '|':
			if i+1 < len(s) && s[i+1] == '|' {
				i++
				continue
			}
			return writes, true // print | "cmd", "cmd" | getline
		case c == '>':
			// Only after print or printf is > a redirection.
			stmt := s[:i]
			if j := strings.LastIndexAny(stmt, ";{}\n"); j >= 0 {
				stmt = stmt[j+1:]
			}
			stmt = strings.TrimSpace(stmt)
			if !strings.HasPrefix(stmt, "print") {
				continue
			}
			j := i + 1
			if j < len(s) && s[j] == '>' {
				j++
			}
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j >= len(s) || s[j] != '"' {
				return writes, true
			}
			k := strings.IndexByte(s[j+1:], '"')
			if k < 0 {
				return writes, true
			}
			writes = append(writes, s[j+1:j+1+k])
			i = j + 1 + k
		case strings.HasPrefix(s[i:], "system") || strings.HasPrefix(s[i:], "getline <"):
			if strings.HasPrefix(s[i:], "system") {
				return writes, true
			}
		}
	}
	return writes, false
}

// parents returns the directories of paths.
func parents(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = appendUniq(out, path.Dir(p))
	}
	return out
}

// buildRunner reports programs that run the code of the project they run
// in: its build, test and package manifests.
func buildRunner(name string) bool {
	switch name {
	case "make", "gmake", "npm", "pnpm", "yarn", "bun", "cargo", "go", "pytest", "tox", "nox", "gradle", "mvn", "bundle",
		"rake", "pip", "pip3", "uv", "poetry", "cmake", "ninja", "meson", "bazel", "npx", "just", "task", "pre-commit":
		return true
	}
	return false
}

// buildFileNames are base names (lower case) of build, test and package
// manifests: the code a build runner runs.
var buildFileNames = map[string]bool{
	"makefile": true, "gnumakefile": true, "package.json": true, "build.rs": true, "conftest.py": true, "setup.py": true,
	"setup.cfg": true, "pyproject.toml": true, "noxfile.py": true, "tox.ini": true, "cargo.toml": true, "cmakelists.txt": true,
	"build.gradle": true, "build.gradle.kts": true, "settings.gradle": true, "settings.gradle.kts": true, "pom.xml": true,
	"rakefile": true, "gemfile": true, "justfile": true, "taskfile.yml": true, "taskfile.yaml": true, ".pre-commit-config.yaml": true,
	"go.mod": true, "build.zig": true, "meson.build": true, "build.sbt": true, "deno.json": true, "bunfig.toml": true,
	"pytest.ini": true, ".npmrc": true, ".yarnrc.yml": true, "lefthook.yml": true, ".lintstagedrc": true,
}

// BuildFile reports whether the slash-separated path p (relative to the
// project, or absolute) names a build, test or package manifest, a
// program installed under node_modules/.bin, or a JavaScript tool's
// configuration loaded as code (vite.config.ts, .eslintrc.cjs).
func BuildFile(p string) bool {
	p = strings.ToLower(p)
	base := path.Base(p)
	if buildFileNames[base] || strings.HasSuffix(base, ".mk") || strings.HasPrefix(p, "node_modules/.bin/") || strings.Contains(p, "/node_modules/.bin/") {
		return true
	}
	ext := path.Ext(base)
	switch ext {
	case ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts":
		stem := strings.TrimSuffix(base, ext)
		return strings.HasSuffix(stem, ".config") || strings.HasPrefix(stem, ".") && strings.HasSuffix(stem, "rc")
	}
	return false
}

// wroteBuildFile reports whether the line wrote a build manifest before
// this point: `echo … > Makefile && make` runs code the gate has not seen.
func (w *walker) wroteBuildFile() bool {
	for _, p := range w.res.Writes {
		if BuildFile(p) {
			return true
		}
	}
	for _, c := range w.res.Commands {
		if c.Name == "mkdir" {
			continue
		}
		for _, p := range c.Writes {
			if BuildFile(p) {
				return true
			}
		}
	}
	return false
}

// isShellOrInterpreter reports programs that run a script file operand.
func isShellOrInterpreter(name string) bool {
	switch strings.TrimRight(name, "0123456789.") {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "source", ".",
		"python", "pypy", "node", "nodejs", "perl", "ruby", "php", "lua", "bun", "deno", "Rscript":
		return true
	}
	return false
}

// fetched reports whether the line, before this point, cloned, unpacked
// or downloaded into one of dirs (anything but creating it empty).
func (w *walker) fetched(dirs []string) bool {
	for _, c := range w.res.Commands {
		if c.Name == "mkdir" || c.Name == "touch" {
			continue
		}
		for _, d := range dirs {
			if slices.Contains(c.Writes, d) {
				return true
			}
		}
	}
	return false
}

// written reports whether the line writes one of paths before this point.
func (w *walker) written(paths []string) bool {
	for _, c := range w.res.Commands {
		for _, p := range paths {
			if slices.Contains(c.Writes, p) {
				return true
			}
		}
	}
	for _, p := range paths {
		if slices.Contains(w.res.Writes, p) {
			return true
		}
	}
	return false
}
