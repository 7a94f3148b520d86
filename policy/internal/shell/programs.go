package shell

import (
	"fmt"
	"path"
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
	env := w.assigns
	w.assigns = nil
	cmd := Command{
		Env:      env,
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
	cmd.Inline = inlineCode(name, args)
	cmd.StdinCode = w.codeOnStdin(name, args)
	cmd.Reads, cmd.Writes = pathArgs(name, args)
	w.res.Commands = append(w.res.Commands, cmd)

	inner := append(append([]string(nil), wrappers...), name)
	switch name {
	case "cd", "pushd", "popd", "chdir":
		ops := skipOpts(args, "", nil)
		switch {
		case name == "popd" || len(ops) > 0 && (!ops[0].lit || ops[0].text == "-" || ops[0].glob):
			w.res.UnknownDir = true
		case len(ops) == 0:
			w.res.Dirs = appendUniq(w.res.Dirs, "~")
		default:
			w.res.Dirs = appendUniq(w.res.Dirs, ops[0].text)
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
		// The command gets arguments from stdin: they are unknown.
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
		for i, a := range rest {
			if a.text == ":::" || a.text == "::::" {
				rest = rest[:i:i]
				break
			}
		}
		if len(rest) == 0 {
			return nil
		}
		return w.invoke(append(rest, arg{text: "$(arguments)"}), inner, pipeline)
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
		case t == "-u" || t == "-C" || t == "--unset" || t == "--chdir":
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
		name, _, ok := strings.Cut(args[0].text, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/ ") {
			break
		}
		w.assigns = appendUniq(w.assigns, name)
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

// shell handles bash/sh/zsh: `-c STRING` is parsed recursively.
func (w *walker) shell(args []arg, inner, pipeline []string) error {
	hasC := false
	for i := 0; i < len(args); i++ {
		t := args[i].text
		switch {
		case t == "--":
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
			return nil // a script file, read as a path argument
		}
	}
	if hasC {
		return nil
	}
	// The shell reads its commands from standard input.
	if w.stdin.doc != nil {
		doc := w.stdin.doc
		w.stdin = stdinSrc{}
		return w.script(w.word(doc), inner, pipeline)
	}
	return nil
}

// codeOnStdin reports a shell, interpreter or source whose program comes
// from its input or a substitution rather than a file: `curl … | sh`,
// `python3 - <<EOF`, `bash <(curl …)`, `source <(…)`, `… | tee >(sh)`.
// Shells parse literal here-documents instead.
func (w *walker) codeOnStdin(name string, args []arg) bool {
	fromInput := w.stdin.pipe || w.stdin.doc != nil
	if name == "source" || name == "." {
		for _, a := range args {
			if !a.lit {
				return true
			}
			return fromInput && (a.text == "/dev/stdin" || a.text == "-")
		}
		return false
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
		return w.stdin.pipe
	}
	return fromInput
}

// find handles -exec/-execdir/-ok/-okdir COMMAND ... ; or +. The {}
// placeholder is replaced by "<start>/*" for each of find's start paths:
// the files the command can be given.
func (w *walker) find(args []arg, inner, pipeline []string) error {
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
					for _, s := range starts {
						argv = append(argv, arg{text: strings.ReplaceAll(a.text, "{}", strings.TrimSuffix(s.text, "/")+"/*"), lit: a.lit && s.lit, glob: true})
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

// inlineCode reports interpreters given code on the command line.
func inlineCode(name string, args []arg) bool {
	var flags []string
	switch strings.TrimRight(name, "0123456789.") {
	case "python", "pypy", "python-m":
		flags = []string{"-c"}
	case "node", "nodejs", "bun":
		flags = []string{"-e", "--eval", "-p", "--print"}
	case "perl", "ruby", "lua", "osascript":
		flags = []string{"-e", "-E"}
	case "php":
		flags = []string{"-r"}
	case "deno":
		return len(args) > 0 && args[0].text == "eval"
	case "awk", "gawk", "mawk", "nawk", "busybox-awk":
		// awk programs can run commands: system(), print | "cmd", "cmd" | getline.
		for _, a := range args {
			if a.text == "-f" || strings.HasPrefix(a.text, "--file") {
				return false
			}
			if !strings.HasPrefix(a.text, "-") {
				return strings.Contains(a.text, "system") || strings.Contains(a.text, "|") || !a.lit
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
				name == "tar" && t == "-I", name == "rsync" && t == "-e":
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

// operands returns the literal non-option arguments, stopping option
// parsing at "--". Dynamic arguments and "-" are left out.
func operands(args []arg) []string {
	var out []string
	opts := true
	for _, a := range args {
		t := a.text
		if opts && t == "--" {
			opts = false
			continue
		}
		if opts && len(t) > 1 && t[0] == '-' {
			continue
		}
		if !a.lit || t == "-" || t == "" || strings.Contains(t, "://") {
			continue
		}
		out = append(out, t)
	}
	return out
}

// pathArgs returns the paths a well-known program reads and writes.
func pathArgs(name string, args []arg) (reads, writes []string) {
	ops := operands(args)
	switch name {
	case "rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "mv", "tee", "mkfifo", "wipe", "srm":
		return nil, ops
	case "chmod", "chown", "chgrp":
		if len(ops) > 0 {
			return nil, ops[1:]
		}
	case "cp", "ln", "install", "rsync", "scp":
		if len(ops) > 0 {
			return ops[:len(ops)-1], ops[len(ops)-1:]
		}
	case "dd":
		for _, o := range ops {
			if v, ok := strings.CutPrefix(o, "of="); ok {
				writes = append(writes, v)
			} else if v, ok := strings.CutPrefix(o, "if="); ok {
				reads = append(reads, v)
			}
		}
		return reads, writes
	case "sed", "perl":
		inPlace := false
		for _, a := range args {
			if a.text == "-i" || strings.HasPrefix(a.text, "-i") || a.text == "--in-place" || strings.HasPrefix(a.text, "--in-place=") ||
				(strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.ContainsRune(a.text, 'i')) {
				inPlace = true
			}
		}
		if len(ops) > 1 {
			if inPlace {
				return nil, ops[1:]
			}
			return ops[1:], nil
		}
	case "cat", "head", "tail", "less", "more", "bat", "tac", "nl", "od", "xxd", "hexdump", "strings",
		"base64", "source", ".", "diff", "cmp", "wc", "sort", "uniq", "md5sum", "sha256sum", "sha1sum", "file", "stat":
		return ops, nil
	case "grep", "egrep", "fgrep", "rg", "ag", "jq", "awk":
		if len(ops) > 1 {
			return ops[1:], nil
		}
	case "find":
		var starts []string
		del := false
		for _, a := range args {
			if a.text == "-delete" {
				del = true
			}
		}
		for _, a := range args {
			if strings.HasPrefix(a.text, "-") || a.text == "(" || a.text == "!" {
				break
			}
			if a.lit {
				starts = append(starts, a.text)
			}
		}
		if len(starts) == 0 {
			starts = []string{"."}
		}
		if del {
			return nil, starts
		}
		return starts, nil
	case "bash", "sh", "zsh", "dash", "ksh", "python", "python3", "node", "ruby":
		// A script file argument is read.
		for _, a := range args {
			if strings.HasPrefix(a.text, "-") {
				return nil, nil
			}
			if a.lit {
				return []string{a.text}, nil
			}
			break
		}
		return nil, nil
	case "curl", "wget":
		for i, a := range args {
			if i+1 < len(args) && args[i+1].lit && (a.text == "-o" || a.text == "--output" || a.text == "-O" && name == "wget" || a.text == "--output-document") {
				writes = append(writes, args[i+1].text)
			}
		}
		return nil, writes
	case "echo", "printf", "cd", "pushd", "popd", ":", "true", "false":
		return nil, nil
	}
	// Any other program: operands that look like paths are read.
	for _, o := range ops {
		if strings.Contains(o, "/") || o[0] == '.' || o[0] == '~' {
			reads = append(reads, o)
		}
	}
	return reads, nil
}
