// Package shell finds what a bash command line runs and touches, for the
// policy gate (DESIGN §4). walker.go walks the syntax tree of
// mvdan.cc/sh/v3/syntax: every simple command anywhere in a line, its
// words unquoted literally, its redirections and standard input;
// programs.go holds what the walker knows about programs: the wrappers it
// unwraps, the shells whose code it parses, the interpreters that run
// inline code, and the paths each program reads and writes.
package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxShellDepth bounds nested `bash -c`, `eval`, `env -S` and `watch` strings.
const maxShellDepth = 8

// maxCommandLen bounds the command line analyzed.
const maxCommandLen = 64 << 10

// maxShellCommands bounds the simple commands taken from one command line.
const maxShellCommands = 512

// Error is why a command line could not be analysed; the gate denies on it.
type Error struct {
	Reason string // "parse_error" or "dynamic_command", a policy reason
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// arg is one shell word after literal unquoting.
type arg struct {
	text string // unquoted text; for dynamic words, a printable approximation
	lit  bool   // fully known: no expansions or brace expansion
	glob bool   // has unquoted glob characters (still a usable path prefix)
}

// Command is one simple command found in a command line, after unwrapping.
type Command struct {
	Name    string   // base name of the program ("rm")
	Path    string   // program as written after unquoting ("/bin/rm")
	Args    []string // arguments after the program
	Dynamic bool     // some argument is not a literal
	Inline  bool     // interpreter given inline code (python -c, node -e, ...)
	// StdinCode is set for a shell or interpreter reading its program from
	// a pipe, here-document or substitution (curl … | sh, bash <(…)).
	StdinCode bool
	Pipeline  []string // programs in the same pipeline or substitutions feeding it
	Wrappers  []string // wrappers unwrapped to reach it
	Env       []string // variables assigned for it (X=1 cmd, env X=1 cmd)
	Reads     []string // path arguments it reads
	Writes    []string // path arguments it writes, deletes or changes
}

// Analysis is everything a command line will run and touch.
type Analysis struct {
	Commands []Command
	Writes   []string // write redirection targets
	Reads    []string // input redirection sources
	// Dirs are the directories the command line may change into (cd,
	// pushd): relative paths can be relative to any of them.
	Dirs []string
	// UnknownDir is set when it changes into a directory only known at
	// run time (cd "$X", cd -, popd).
	UnknownDir bool
}

type walker struct {
	res     Analysis
	home    string
	cwd     string
	depth   int
	names   map[*syntax.CallExpr][]string // program names per call, for pipeline context
	assigns []string                      // assignments for the next invoke
	stdinOf map[*syntax.CallExpr]stdinSrc
	stdin   stdinSrc // of the call being unwrapped
}

// stdinSrc is where a command's standard input comes from, when that can
// be code for a shell or interpreter.
type stdinSrc struct {
	pipe bool         // a pipe: whatever the upstream command prints
	doc  *syntax.Word // a here-document or here-string
}

// Analyze parses a bash command line and returns every simple command
// anywhere in it (pipelines, lists, substitutions, subshells, functions,
// `bash -c` strings, wrapper arguments), and every redirection target.
// home and cwd substitute $HOME and $PWD. Parse errors and program names
// that are not literals are errors.
func Analyze(src, home, cwd string) (*Analysis, error) {
	if len(src) > maxCommandLen {
		return nil, &Error{"parse_error", fmt.Sprintf("command line longer than %d bytes", maxCommandLen)}
	}
	w := &walker{home: home, cwd: cwd, names: make(map[*syntax.CallExpr][]string)}
	if err := w.parse(src, nil, nil); err != nil {
		return nil, err
	}
	return &w.res, nil
}

func (w *walker) parse(src string, wrappers, pipeline []string) (err error) {
	if w.depth >= maxShellDepth {
		return &Error{"dynamic_command", "shell commands nested too deeply"}
	}
	w.depth++
	defer func() { w.depth-- }()
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, perr := p.Parse(strings.NewReader(src), "")
	if perr != nil {
		return &Error{"parse_error", "cannot parse shell command: " + strings.Join(strings.Fields(perr.Error()), " ")}
	}
	pipes := make(map[*syntax.CallExpr][]string)
	donePipes := make(map[*syntax.BinaryCmd]bool)
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && !donePipes[n] {
				// Every command under the outermost pipe sees every
				// program in it (an over-approximation for nested ones).
				names := w.namesIn(n)
				w.markPiped(n)
				syntax.Walk(n, func(m syntax.Node) bool {
					switch m := m.(type) {
					case *syntax.CallExpr:
						pipes[m] = appendUniq(pipes[m], names...)
					case *syntax.BinaryCmd:
						donePipes[m] = true
					}
					return true
				})
			}
		case *syntax.ProcSubst:
			if n.Op == syntax.CmdOut {
				// >(cmd) reads what the outer command writes.
				syntax.Walk(n, func(m syntax.Node) bool {
					if c, ok := m.(*syntax.CallExpr); ok {
						w.setStdin(c, func(s *stdinSrc) { s.pipe = true })
					}
					return true
				})
			}
		case *syntax.Stmt:
			err = w.redirects(n)
			if c, ok := n.Cmd.(*syntax.CallExpr); ok {
				for _, r := range n.Redirs {
					switch r.Op {
					case syntax.Hdoc, syntax.DashHdoc:
						w.setStdin(c, func(s *stdinSrc) { s.doc = r.Hdoc })
					case syntax.WordHdoc:
						w.setStdin(c, func(s *stdinSrc) { s.doc = r.Word })
					}
				}
			}
		case *syntax.CallExpr:
			err = w.call(n, wrappers, appendUniq(append([]string(nil), pipeline...), pipes[n]...))
		}
		return err == nil
	})
	return err
}

// namesIn returns the program names of the simple commands under n, for
// pipeline context. Errors are ignored here; call reports them.
func (w *walker) namesIn(n syntax.Node) []string {
	var names []string
	syntax.Walk(n, func(m syntax.Node) bool {
		c, ok := m.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		cached, ok := w.names[c]
		if !ok {
			sub := &walker{home: w.home, cwd: w.cwd, depth: w.depth, names: w.names}
			_ = sub.invoke(w.words(c.Args), nil, nil)
			for _, cmd := range sub.res.Commands {
				cached = appendUniq(cached, cmd.Name)
			}
			w.names[c] = cached
		}
		names = appendUniq(names, cached...)
		return true
	})
	return names
}

func (w *walker) redirects(s *syntax.Stmt) error {
	for _, r := range s.Redirs {
		if r.Word == nil {
			continue
		}
		var write bool
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob,
			syntax.AppClob, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
			write = true
		case syntax.DplOut:
			a := w.word(r.Word)
			if a.lit && (a.text == "-" || isDigits(a.text)) {
				continue
			}
			write = true
		case syntax.RdrIn:
		default: // <&, here-documents, here-strings
			continue
		}
		a := w.word(r.Word)
		if !a.lit {
			return &Error{"dynamic_command", fmt.Sprintf("redirection target %q is not a literal path", a.text)}
		}
		if write {
			w.res.Writes = append(w.res.Writes, a.text)
		} else {
			w.res.Reads = append(w.res.Reads, a.text)
		}
	}
	return nil
}

func (w *walker) setStdin(c *syntax.CallExpr, f func(*stdinSrc)) {
	if w.stdinOf == nil {
		w.stdinOf = make(map[*syntax.CallExpr]stdinSrc)
	}
	s := w.stdinOf[c]
	f(&s)
	w.stdinOf[c] = s
}

// markPiped records that the commands on the right of a pipe read it.
func (w *walker) markPiped(b *syntax.BinaryCmd) {
	syntax.Walk(b, func(m syntax.Node) bool {
		if p, ok := m.(*syntax.BinaryCmd); ok && (p.Op == syntax.Pipe || p.Op == syntax.PipeAll) {
			syntax.Walk(p.Y, func(n syntax.Node) bool {
				if c, ok := n.(*syntax.CallExpr); ok {
					w.setStdin(c, func(s *stdinSrc) { s.pipe = true })
				}
				return true
			})
		}
		return true
	})
}

func (w *walker) call(c *syntax.CallExpr, wrappers, pipeline []string) error {
	if len(c.Args) == 0 {
		return nil // assignments only; their substitutions are walked
	}
	saved := w.stdin
	w.stdin = w.stdinOf[c]
	defer func() { w.stdin = saved }()
	// Programs in substitutions inside the arguments feed this command.
	for _, a := range c.Args {
		for _, part := range a.Parts {
			switch part.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.DblQuoted:
				pipeline = appendUniq(pipeline, w.namesIn(part)...)
			}
		}
	}
	for _, a := range c.Assigns {
		if a.Name != nil {
			w.assigns = appendUniq(w.assigns, a.Name.Value)
		}
	}
	return w.invoke(w.words(c.Args), wrappers, pipeline)
}

func (w *walker) words(ws []*syntax.Word) []arg {
	out := make([]arg, len(ws))
	for i, x := range ws {
		out[i] = w.word(x)
	}
	return out
}

// word unquotes a word literally: `r”m` is rm, `\rm` is rm, "$HOME" is the
// home directory. Anything else that expands makes the word dynamic.
func (w *walker) word(x *syntax.Word) arg {
	var b, unquoted strings.Builder
	lit, glob := true, false
	// expand writes a part that expands: $HOME and the like as their
	// value, anything else as a marker that makes the word dynamic.
	expand := func(part syntax.WordPart) {
		if p, ok := part.(*syntax.ParamExp); ok {
			v, ok := w.param(p)
			lit = lit && ok
			b.WriteString(v)
			return
		}
		lit = false
		b.WriteString("$(…)")
	}
	for _, part := range x.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if strings.ContainsAny(v, "*?[") {
				glob = true
			}
			unquoted.WriteString(v)
			b.WriteString(unescapeLit(v, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				lit = false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				lit = false
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeLit(l.Value, true))
				} else {
					expand(q)
				}
			}
		default:
			expand(part)
		}
	}
	if u := unquoted.String(); strings.Contains(u, "{") && strings.Contains(u, "}") && (strings.Contains(u, ",") || strings.Contains(u, "..")) {
		lit = false // brace expansion can produce any word
	}
	return arg{text: b.String(), lit: lit, glob: glob}
}

// param resolves $HOME and $PWD; any other parameter is dynamic.
func (w *walker) param(p *syntax.ParamExp) (string, bool) {
	if p.Param == nil {
		return "${…}", false
	}
	name := p.Param.Value
	simple := p.Index == nil && p.Exp == nil && p.Repl == nil && p.Slice == nil &&
		!p.Excl && !p.Length && !p.Width && p.Names == 0 && len(p.Modifiers) == 0 && p.Flags == nil && p.NestedParam == nil
	if simple {
		switch {
		case name == "HOME" && w.home != "":
			return w.home, true
		case name == "PWD" && w.cwd != "":
			return w.cwd, true
		}
	}
	return "$" + name, false
}

func unescapeLit(s string, dquoted bool) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !dquoted || strings.IndexByte("$`\"\\\n", n) >= 0 {
				i++
				if n != '\n' {
					b.WriteByte(n)
				}
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func appendUniq(dst []string, xs ...string) []string {
	for _, x := range xs {
		found := false
		for _, d := range dst {
			if d == x {
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, x)
		}
	}
	return dst
}

func texts(as []arg) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.text
	}
	return out
}
