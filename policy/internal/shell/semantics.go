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
	syntax.Walk(f, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && n.Exp.Word.Lit() == "P" {
				err = &Error{"dynamic_command", "prompt expansion ${…@P} runs the substitutions in a variable's value"}
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			arith = true
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
			}
		case *syntax.CallExpr:
			for _, a := range n.Args {
				switch a.Lit() {
				case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
					arith = true
				}
			}
		}
		return true
	})
	if err != nil || !arith {
		return err
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
