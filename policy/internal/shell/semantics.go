package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// semantics refuses shell features that run code hidden in a variable's
// value, where the line only shows a quoted string:
//
//   - prompt expansion, ${x@P}, runs the $(…) and `…` in x's value;
//   - arithmetic evaluates an array subscript in a variable's value, and
//     the subscript's $(…) runs: v='a[$(id)]'; echo $((v)), (( v )),
//     let, declare -i, [[ $v -eq 0 ]], test -eq.
//
// It is called after prepare, with the values the line assigns known.
func (w *walker) semantics(f *syntax.File) error {
	var err error
	arith := false
	var refs []string // variables arithmetic evaluates
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Index != nil {
				// ${arr[i]}: the subscript is arithmetic.
				arith = true
				refs = arithRefs(n.Index, refs)
			}
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && n.Exp.Word.Lit() == "P" {
				err = &Error{"dynamic_command", "prompt expansion ${…@P} runs the substitutions in a variable's value"}
			}
		case *syntax.ArithmExp:
			arith = true
			refs = arithRefs(n.X, refs)
		case *syntax.ArithmCmd:
			arith = true
			refs = arithRefs(n.X, refs)
		case *syntax.LetClause:
			arith = true
			for _, e := range n.Exprs {
				refs = arithRefs(e, refs)
			}
		case *syntax.DeclClause:
			for _, a := range n.Args {
				if a.Naked && a.Name == nil && a.Value != nil && strings.HasPrefix(a.Value.Lit(), "-") && strings.Contains(a.Value.Lit(), "i") {
					arith = true
				}
			}
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsLeq, syntax.TsGtr, syntax.TsGeq:
				arith = true
				refs = arithRefs(n.X, refs)
				refs = arithRefs(n.Y, refs)
			}
		case *syntax.CallExpr:
			for _, a := range n.Args {
				switch a.Lit() {
				case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
					arith = true
					for _, b := range n.Args {
						refs = arithRefs(b, refs)
					}
				}
			}
		}
		return true
	})
	if err != nil || !arith {
		return err
	}
	for _, name := range refs {
		// A value read from input (read, printf -v, mapfile) is
		// unknown: evaluated as arithmetic, it can hold a subscript.
		if w.inputVars[name] {
			return &Error{"dynamic_command", "arithmetic evaluates " + name + ", read from input, which can run a substitution in a subscript"}
		}
	}
	for name, vs := range w.vars {
		for _, v := range vs {
			if subscriptCode(v.text) {
				return &Error{"dynamic_command", "variable " + name + " holds an array subscript with a substitution, which arithmetic would run"}
			}
		}
	}
	return nil
}

// subscriptCode reports text with a [ followed by $( or ` or ${: what an
// arithmetic evaluation of it would run.
func subscriptCode(s string) bool {
	i := strings.IndexByte(s, '[')
	if i < 0 {
		return false
	}
	rest := s[i:]
	return strings.Contains(rest, "$(") || strings.Contains(rest, "`") || strings.Contains(rest, "${")
}

// arithRefs appends the names of the variables an arithmetic expression
// or test operand refers to: $x, ${x} and bare names.
func arithRefs(n syntax.Node, refs []string) []string {
	if n == nil {
		return refs
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.ParamExp:
			if m.Param != nil {
				refs = appendUniq(refs, m.Param.Value)
			}
		case *syntax.Word:
			if l := m.Lit(); l != "" && syntax.ValidName(l) {
				refs = appendUniq(refs, l)
			}
		}
		return true
	})
	return refs
}
