// Package shell finds what a bash command line runs and touches, for the
// policy gate (DESIGN §4). walker.go walks the syntax tree of
// mvdan.cc/sh/v3/syntax: every simple command anywhere in a line, the
// directory each one runs in (cd, pushd, popd, subshells, && and ||), its
// words unquoted literally with the variables the line itself assigns, its
// redirections and standard input; programs.go holds what the walker knows
// about programs: the wrappers it unwraps, the shells whose code it parses,
// the interpreters that run inline code, and the paths each program reads
// and writes; paths.go resolves paths and globs.
package shell

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxShellDepth bounds nested `bash -c`, `eval`, `env -S` and `watch` strings.
const maxShellDepth = 8

// maxCommandLen bounds the command line analyzed.
const maxCommandLen = 64 << 10

// maxShellCommands bounds the simple commands taken from one command line.
const maxShellCommands = 512

// maxWords bounds the words one word expands to (braces, loop variables).
const maxWords = 64

// Error is why a command line could not be analysed; the gate denies on it.
type Error struct {
	Reason string // "parse_error" or "dynamic_command", a policy reason
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// arg is one shell word after literal unquoting.
type arg struct {
	text string // unquoted text; for dynamic words, a printable approximation
	lit  bool   // fully known: no expansions
	glob bool   // has unquoted glob characters: matches files
	deep bool   // a find or --include pattern: matches at any depth, and leading dots
	proc bool   // only a process substitution: a pipe, not a file
}

// Command is one simple command found in a command line, after unwrapping.
type Command struct {
	Name string // base name of the program ("rm")
	Path string // program as written after unquoting ("/bin/rm")
	// ProgramFiles are the files the program may be when it is named by a
	// path (./gradlew, scripts/test.sh), resolved like Reads.
	ProgramFiles []string
	Args         []string // arguments after the program
	Dynamic      bool     // some argument is not a literal
	// DynamicPaths is set when an argument the program takes as a file is
	// only known at run time ("$F", $(…), xargs input).
	DynamicPaths bool
	Inline       bool // interpreter given inline code (python -c, node -e, ...)
	// StdinCode is set for a shell or interpreter reading its program from
	// a pipe, here-document or substitution (curl … | sh, bash <(…)).
	StdinCode bool
	Pipeline  []string // programs in the same pipeline or substitutions feeding it
	Wrappers  []string // wrappers unwrapped to reach it
	// Env names the variables set for it: X=1 cmd, env X=1 cmd, and
	// those the line exported before it (see env.go).
	Env []string
	// Unmodelled names what the analyser does not model of this call: an
	// option, subcommand or option value of a program it otherwise
	// understands ("git send-email", "--outp"). The policy asks about it.
	Unmodelled []string
	// Flags are the canonical names of long options the program model
	// resolved from an abbreviation (--hard for `git reset --har`).
	Flags []string
	// Reads and Writes are the files it reads and writes, deletes or
	// changes: absolute and clean, resolved against the directory the
	// command runs in (a path under a directory only known at run time is
	// taken as under "/"), with every file a glob in them matches.
	// "~/…" stays as is when no home directory is known.
	Reads  []string
	Writes []string
}

// Analysis is everything a command line will run and touch.
type Analysis struct {
	Commands []Command
	Writes   []string // write redirection targets, resolved like Command.Writes
	Reads    []string // input redirection sources
}

// unknownDir stands for a directory only known at run time.
const unknownDir = "\x00"

type walker struct {
	res     Analysis
	home    string
	project string // the git work tree: $(git rev-parse --show-toplevel)
	depth   int
	names   map[*syntax.CallExpr][]string // program names per call, for pipeline context
	pipes   map[*syntax.CallExpr][]string // programs piped into or around a call
	assigns []envVar                      // assignments for the next invoke
	// exported are the variables the line exported so far (export,
	// declare -x, set -a, a sourced file): every later command has them.
	exported  []envVar
	allexport bool // set -a is on
	stdinOf   map[*syntax.CallExpr]stdinSrc
	stdin     stdinSrc // of the call being unwrapped
	// dirs are the directories the next command may run in.
	dirs  []string
	stack [][]string // pushd
	// vars are the values the line assigns to each variable; a variable
	// also assigned something dynamic (read, $(…)) is in dynVars.
	vars    map[string][]arg
	dynVars map[string]bool
	// inputVars are set from input: read, mapfile, printf -v, getopts.
	inputVars map[string]bool
	fixed     map[string]arg                    // one value of a variable, while expanding a word
	cdpath    bool                              // CDPATH is set: relative cd targets are unknown
	wrap      []string                          // wrappers around the code being parsed
	pipe      []string                          // pipeline around the code being parsed
	onCd      func(dirs []string, certain bool) // set by call: what a cd does to w.dirs
}

// stdinSrc is where a command's standard input comes from, when that can
// be code for a shell or interpreter.
type stdinSrc struct {
	pipe bool             // a pipe: whatever the upstream command prints
	doc  *syntax.Word     // a here-document or here-string
	text *arg             // literal text piped in (echo '…' | sh)
	from *syntax.CallExpr // the simple command piped in, when it is one
}

// Analyze parses a bash command line and returns every simple command
// anywhere in it (pipelines, lists, substitutions, subshells, functions,
// `bash -c` strings, wrapper arguments), and every redirection target.
// home and cwd are the home and starting directories, project the root of
// the project's work tree ("" if unknown). Parse errors and program names
// that are not literals are errors.
func Analyze(src, home, cwd, project string) (*Analysis, error) {
	if len(src) > maxCommandLen {
		return nil, &Error{"parse_error", fmt.Sprintf("command line longer than %d bytes", maxCommandLen)}
	}
	w := &walker{
		home: home, dirs: []string{cwd}, project: project,
		names: make(map[*syntax.CallExpr][]string), pipes: make(map[*syntax.CallExpr][]string),
		vars: make(map[string][]arg), dynVars: make(map[string]bool),
	}
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
	savedWrap, savedPipe, savedDirs := w.wrap, w.pipe, w.dirs
	defer func() { w.depth--; w.wrap, w.pipe, w.dirs = savedWrap, savedPipe, savedDirs }()
	w.wrap, w.pipe = wrappers, pipeline
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	f, perr := p.Parse(strings.NewReader(src), "")
	if perr != nil {
		return &Error{"parse_error", "cannot parse shell command: " + strings.Join(strings.Fields(perr.Error()), " ")}
	}
	w.prepare(f)
	if err := w.semantics(f); err != nil {
		return err
	}
	_, err = w.stmts(f.Stmts)
	return err
}

// prepare records, before the walk, what feeds each command: pipes,
// here-documents, process substitutions, and the variables the line sets.
func (w *walker) prepare(f *syntax.File) {
	donePipes := make(map[*syntax.BinaryCmd]bool)
	syntax.Walk(f, func(n syntax.Node) bool {
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
						w.pipes[m] = appendUniq(w.pipes[m], names...)
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
			w.prepareVars(n)
		case *syntax.DeclClause:
			for _, a := range n.Args {
				if a.Name != nil && !a.Naked {
					w.setVar(a.Name.Value, a.Value)
				}
			}
		case *syntax.ForClause:
			if it, ok := n.Loop.(*syntax.WordIter); ok {
				if len(it.Items) == 0 {
					w.dynVars[it.Name.Value] = true
				}
				for _, x := range it.Items {
					w.setVar(it.Name.Value, x)
				}
			}
		}
		return true
	})
}

// prepareVars records the assignments of a command without arguments
// (X=1) and the variables read, mapfile and getopts set.
func (w *walker) prepareVars(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			if a.Name != nil {
				w.setVar(a.Name.Value, a.Value)
			}
		}
		return
	}
	for _, a := range c.Assigns {
		if a.Name != nil && a.Name.Value == "CDPATH" {
			w.cdpath = true
		}
	}
	switch c.Args[0].Lit() {
	case "read", "mapfile", "readarray", "getopts", "printf", "select":
		for _, a := range c.Args[1:] {
			if l := a.Lit(); l != "" && !strings.HasPrefix(l, "-") {
				w.dynVars[l] = true
				if w.inputVars == nil {
					w.inputVars = make(map[string]bool)
				}
				w.inputVars[l] = true
			}
		}
	}
}

func (w *walker) setVar(name string, value *syntax.Word) {
	if name == "CDPATH" {
		w.cdpath = true
	}
	if value == nil {
		w.vars[name] = append(w.vars[name], arg{lit: true})
		return
	}
	a := w.word(value)
	if !a.lit {
		w.dynVars[name] = true
		return
	}
	w.vars[name] = append(w.vars[name], a)
}

// stmts walks a statement list in order and returns the directories the
// list leaves the shell in when it succeeds; w.dirs is left with every
// directory it may leave the shell in.
func (w *walker) stmts(list []*syntax.Stmt) ([]string, error) {
	ok := w.dirs
	for _, s := range list {
		var err error
		if ok, err = w.stmt(s); err != nil {
			return nil, err
		}
	}
	return ok, nil
}

func (w *walker) stmt(s *syntax.Stmt) ([]string, error) {
	for _, r := range s.Redirs {
		if err := w.substs(r); err != nil {
			return nil, err
		}
	}
	if err := w.redirects(s); err != nil {
		return nil, err
	}
	if s.Background || s.Coprocess {
		saved := w.dirs
		_, err := w.command(s.Cmd)
		w.dirs = saved
		return saved, err
	}
	return w.command(s.Cmd)
}

// command walks one command; see stmts for the directories.
func (w *walker) command(c syntax.Command) ([]string, error) {
	before := w.dirs
	switch c := c.(type) {
	case nil:
		return before, nil
	case *syntax.CallExpr:
		ok := before
		if len(c.Args) > 0 {
			var err error
			if ok, err = w.call(c); err != nil {
				return nil, err
			}
		} else {
			w.assignOnly(c)
		}
		for _, a := range c.Assigns {
			if err := w.substs(a); err != nil {
				return nil, err
			}
		}
		for _, a := range c.Args {
			if err := w.substs(a); err != nil {
				return nil, err
			}
		}
		return ok, nil
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			okX, err := w.stmt(c.X)
			if err != nil {
				return nil, err
			}
			anyX := w.dirs
			w.dirs = okX
			okY, err := w.stmt(c.Y)
			w.dirs = union(anyX, w.dirs)
			return okY, err
		case syntax.OrStmt:
			okX, err := w.stmt(c.X)
			if err != nil {
				return nil, err
			}
			anyX := w.dirs
			okY, err := w.stmt(c.Y)
			w.dirs = union(anyX, w.dirs)
			return union(okX, okY), err
		default: // pipes: each side runs in a subshell
			if _, err := w.stmt(c.X); err != nil {
				return nil, err
			}
			w.dirs = before
			_, err := w.stmt(c.Y)
			w.dirs = before
			return before, err
		}
	case *syntax.Subshell:
		_, err := w.stmts(c.Stmts)
		w.dirs = before
		return before, err
	case *syntax.Block:
		return w.stmts(c.Stmts)
	case *syntax.IfClause:
		okC, err := w.stmts(c.Cond)
		if err != nil {
			return nil, err
		}
		anyC := w.dirs
		w.dirs = okC
		if _, err := w.stmts(c.Then); err != nil {
			return nil, err
		}
		then := w.dirs
		w.dirs = anyC
		if c.Else != nil {
			if _, err := w.command(c.Else); err != nil {
				return nil, err
			}
		}
		w.dirs = union(then, w.dirs)
		return w.dirs, nil
	case *syntax.WhileClause:
		return w.loop(before, nil, c.Cond, c.Do)
	case *syntax.ForClause:
		return w.loop(before, c.Loop, nil, c.Do)
	case *syntax.CaseClause:
		if err := w.substs(c.Word); err != nil {
			return nil, err
		}
		all := before
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				if err := w.substs(p); err != nil {
					return nil, err
				}
			}
			w.dirs = before
			if _, err := w.stmts(it.Stmts); err != nil {
				return nil, err
			}
			all = union(all, w.dirs)
		}
		w.dirs = all
		return all, nil
	case *syntax.FuncDecl:
		names := c.Names
		if c.Name != nil {
			names = append(names, c.Name)
		}
		recursive := ""
		syntax.Walk(c.Body, func(n syntax.Node) bool {
			if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				for _, name := range names {
					if call.Args[0].Lit() == name.Value {
						recursive = name.Value
					}
				}
			}
			return recursive == ""
		})
		if recursive != "" {
			return nil, &Error{"dynamic_command", fmt.Sprintf("shell function %q calls itself", recursive)}
		}
		_, err := w.stmt(c.Body)
		w.dirs = before
		return before, err
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return w.stmt(c.Stmt)
		}
		return before, nil
	case *syntax.CoprocClause:
		_, err := w.stmt(c.Stmt)
		w.dirs = before
		return before, err
	case *syntax.DeclClause:
		w.decl(c)
		return before, w.substs(c)
	default: // tests, arithmetic: only their substitutions run
		return before, w.substs(c)
	}
}

// loop walks a loop body twice when it changes directory, so that the
// second round sees where the first one left.
func (w *walker) loop(before []string, words syntax.Node, cond, body []*syntax.Stmt) ([]string, error) {
	if words != nil {
		if err := w.substs(words); err != nil {
			return nil, err
		}
	}
	for range 2 {
		if _, err := w.stmts(cond); err != nil {
			return nil, err
		}
		if _, err := w.stmts(body); err != nil {
			return nil, err
		}
		if slices.Equal(w.dirs, before) {
			break
		}
		w.dirs = union(before, w.dirs)
	}
	w.dirs = union(before, w.dirs)
	return w.dirs, nil
}

// substs walks the command and process substitutions inside n, each in a
// subshell.
func (w *walker) substs(n syntax.Node) error {
	var err error
	syntax.Walk(n, func(m syntax.Node) bool {
		if err != nil {
			return false
		}
		var list []*syntax.Stmt
		switch m := m.(type) {
		case *syntax.CmdSubst:
			list = m.Stmts
		case *syntax.ProcSubst:
			list = m.Stmts
		default:
			return true
		}
		saved := w.dirs
		_, err = w.stmts(list)
		w.dirs = saved
		return false
	})
	return err
}

func union(a, b []string) []string {
	if slices.Equal(a, b) {
		return a
	}
	return appendUniq(slices.Clone(a), b...)
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
			sub := &walker{home: w.home, project: w.project, dirs: w.dirs, depth: w.depth, names: w.names, pipes: w.pipes, vars: w.vars, dynVars: w.dynVars}
			_ = sub.invoke(sub.words(c.Args), nil, nil)
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
			w.res.Writes = append(w.res.Writes, w.resolve(a, false)...)
		} else {
			w.res.Reads = append(w.res.Reads, w.resolve(a, false)...)
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

// markPiped records that the commands on the right of a pipe read it, and
// the literal text printed into a pipe by echo, printf or a here-document
// to cat, so that `echo '…' | sh` is parsed like `sh -c '…'`.
func (w *walker) markPiped(b *syntax.BinaryCmd) {
	syntax.Walk(b, func(m syntax.Node) bool {
		p, ok := m.(*syntax.BinaryCmd)
		if !ok || (p.Op != syntax.Pipe && p.Op != syntax.PipeAll) {
			return true
		}
		text := w.printed(p.X)
		from, _ := p.X.Cmd.(*syntax.CallExpr)
		syntax.Walk(p.Y, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok {
				w.setStdin(c, func(s *stdinSrc) { s.pipe = true; s.text = text; s.from = from })
			}
			return true
		})
		return true
	})
}

// printed returns what a statement prints when that is a literal: echo
// and printf of literal words, cat of a literal here-document.
func (w *walker) printed(s *syntax.Stmt) *arg {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		return nil
	}
	args := w.words(c.Args)
	var parts []string
	switch args[0].text {
	case "echo", "printf":
		for _, a := range args[1:] {
			if !a.lit {
				return &arg{text: "$(…)"}
			}
			if args[0].text == "echo" && strings.HasPrefix(a.text, "-") && len(parts) == 0 {
				continue
			}
			parts = append(parts, a.text)
		}
	case "cat":
		if len(args) > 1 || len(s.Redirs) != 1 {
			return nil
		}
		r := s.Redirs[0]
		doc := r.Hdoc
		if r.Op == syntax.WordHdoc {
			doc = r.Word
		}
		if doc == nil {
			return nil
		}
		a := w.word(doc)
		return &a
	default:
		return nil
	}
	return &arg{text: strings.Join(parts, " "), lit: true}
}

func (w *walker) call(c *syntax.CallExpr) ([]string, error) {
	saved := w.stdin
	w.stdin = w.stdinOf[c]
	defer func() { w.stdin = saved }()
	pipeline := appendUniq(slices.Clone(w.pipe), w.pipes[c]...)
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
			w.assigns = append(w.assigns, w.envVar(a))
		}
	}
	before := w.dirs
	ok := before
	savedCd := w.onCd
	defer func() { w.onCd = savedCd }()
	w.onCd = func(dirs []string, certain bool) {
		ok = dirs
		if certain {
			w.dirs = dirs
		} else {
			w.dirs = union(before, dirs)
		}
	}
	err := w.invoke(w.words(c.Args), w.wrap, pipeline)
	return ok, err
}

// words expands the words of a command: brace expansion (except in the
// program name) and each value of a variable the line assigns several
// values (a for loop), up to maxWords words each.
func (w *walker) words(ws []*syntax.Word) []arg {
	out := make([]arg, 0, len(ws))
	for i, x := range ws {
		if i > 0 && strings.Contains(x.Lit()+litParts(x), "{") {
			// SplitBraces rewrites the word it is given: split a copy.
			y := *x
			y.Parts = slices.Clone(x.Parts)
			x = &y
		}
		if i > 0 && syntax.SplitBraces(x) {
			n := 0
			for y, err := range expand.BracesSeq(nil, x) {
				if n++; err != nil || n > maxWords {
					out = append(out, arg{text: "{…}"})
					break
				}
				out = append(out, w.values(y)...)
			}
			continue
		}
		if i == 0 {
			out = append(out, w.word(x))
			continue
		}
		if files, ok := w.listedBy(x); ok {
			out = append(out, files...)
			continue
		}
		out = append(out, w.values(x)...)
	}
	return out
}

// litParts concatenates the unquoted literal parts of a word.
func litParts(x *syntax.Word) string {
	var b strings.Builder
	for _, p := range x.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}

// values expands a word once per value of the variables with several
// values that it names.
func (w *walker) values(x *syntax.Word) []arg {
	var multi []string
	syntax.Walk(x, func(n syntax.Node) bool {
		if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil && len(w.vars[p.Param.Value]) > 1 && !w.dynVars[p.Param.Value] {
			multi = appendUniq(multi, p.Param.Value)
		}
		return true
	})
	if len(multi) == 0 {
		return []arg{w.word(x)}
	}
	var out []arg
	var rec func(i int)
	rec = func(i int) {
		if len(out) >= maxWords {
			return
		}
		if i == len(multi) {
			out = append(out, w.word(x))
			return
		}
		for _, v := range w.vars[multi[i]] {
			if w.fixed == nil {
				w.fixed = make(map[string]arg)
			}
			w.fixed[multi[i]] = v
			rec(i + 1)
		}
		delete(w.fixed, multi[i])
	}
	rec(0)
	return out
}

// word unquotes a word literally: `r”m` is rm, `\rm` is rm, "$HOME" is the
// home directory. Anything else that expands makes the word dynamic.
func (w *walker) word(x *syntax.Word) arg {
	var b, unquoted strings.Builder
	lit, glob := true, false
	// expand writes a part that expands: $HOME and the like as their
	// value, anything else as a marker that makes the word dynamic.
	expand := func(part syntax.WordPart, quoted bool) {
		if w.project != "" && isToplevel(part) {
			b.WriteString(w.project)
			return
		}
		if p, ok := part.(*syntax.ParamExp); ok {
			v, ok := w.param(p)
			lit = lit && ok
			glob = glob || ok && v.glob && !quoted
			b.WriteString(v.text)
			return
		}
		lit = false
		b.WriteString("$(…)")
	}
	for _, part := range x.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if isGlob(v) {
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
					expand(q, true)
				}
			}
		default:
			expand(part, false)
		}
	}
	if len(x.Parts) == 1 {
		if _, ok := x.Parts[0].(*syntax.ProcSubst); ok {
			return arg{text: "/dev/fd/…", proc: true}
		}
	}
	if u := unquoted.String(); strings.Contains(u, "{") && strings.Contains(u, "}") && (strings.Contains(u, ",") || strings.Contains(u, "..")) {
		lit = false // brace expansion can produce any word
	}
	return arg{text: b.String(), lit: lit, glob: glob}
}

// isToplevel reports $(git rev-parse --show-toplevel), the project root.
func isToplevel(part syntax.WordPart) bool {
	cs, ok := part.(*syntax.CmdSubst)
	if !ok || len(cs.Stmts) != 1 || len(cs.Stmts[0].Redirs) > 0 {
		return false
	}
	c, ok := cs.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(c.Assigns) > 0 || len(c.Args) != 3 {
		return false
	}
	return c.Args[0].Lit() == "git" && c.Args[1].Lit() == "rev-parse" && c.Args[2].Lit() == "--show-toplevel"
}

// isGlob reports unquoted text with glob characters: * and ?, or a [
// with a closing ] ("[" alone is the test command).
func isGlob(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') > 0
}

// param resolves $HOME, $PWD while the directory is known, and variables
// the line assigns one literal value; any other parameter is dynamic.
func (w *walker) param(p *syntax.ParamExp) (arg, bool) {
	if p.Param == nil {
		return arg{text: "${…}"}, false
	}
	name := p.Param.Value
	simple := p.Index == nil && p.Exp == nil && p.Repl == nil && p.Slice == nil &&
		!p.Excl && !p.Length && !p.Width && p.Names == 0 && len(p.Modifiers) == 0 && p.Flags == nil && p.NestedParam == nil
	if simple {
		if v, ok := w.fixed[name]; ok {
			return v, true
		}
		if vs := w.vars[name]; len(vs) == 1 && !w.dynVars[name] && name != "HOME" && name != "PWD" {
			return vs[0], true
		}
		_, assigned := w.vars[name]
		switch {
		case assigned || w.dynVars[name]:
		case name == "HOME" && w.home != "":
			return arg{text: w.home, lit: true}, true
		case name == "PWD" && len(w.dirs) == 1 && w.dirs[0] != "" && w.dirs[0] != unknownDir:
			return arg{text: w.dirs[0], lit: true}, true
		}
	}
	return arg{text: "$" + name}, false
}

// dirExists reports whether the clean absolute path p is a directory now.
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
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
