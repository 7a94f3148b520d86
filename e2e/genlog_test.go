package e2e

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/docketlog/docket/internal/tlogtest"
)

// scriptTB lets tlogtest's helpers, which take a testing.TB, run in a
// script command: failures fail the script. It has only the methods they
// call.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
}

func (t scriptTB) Helper()                      {}
func (t scriptTB) Fatal(args ...any)            { t.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (t scriptTB) Fatalf(f string, args ...any) { t.ts.Fatalf(f, args...) }
func (t scriptTB) Errorf(f string, args ...any) { t.ts.Fatalf(f, args...) }
func (t scriptTB) Cleanup(f func())             { t.ts.Defer(f) }
func (t scriptTB) Logf(f string, args ...any)   { t.ts.Logf(f, args...) }
func (t scriptTB) Log(args ...any)              { t.ts.Logf("%s", fmt.Sprint(args...)) }
func (t scriptTB) Error(args ...any)            { t.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (t scriptTB) Fail()                        { t.ts.Fatalf("failed") }
func (t scriptTB) FailNow()                     { t.ts.Fatalf("failed") }
func (t scriptTB) Chdir(dir string)             { t.ts.Fatalf("chdir unsupported") }

// cmdGenlog writes a Tessera POSIX log in DIR of N sessions of one issuer
// (start, decision, execution, end: 4N entries) with one entry that is not
// a Docket receipt after the first BAD sessions, and its verifier key in
// DIR.vkey: `genlog DIR N BAD`.
func cmdGenlog(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: genlog DIR N BAD")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	bad, err := strconv.Atoi(args[2])
	ts.Check(err)
	t := scriptTB{ts: ts}
	k := tlogtest.NewKeyPair(t, "example.com/genlog")
	l := tlogtest.NewPOSIX(t, ts.MkAbs(args[0]), k)
	is := tlogtest.NewIssuer(t)
	var leaves [][]byte
	for i := range n {
		if i == bad {
			leaves = append(leaves, []byte("not a receipt"))
		}
		s := fmt.Sprint("s", i)
		d, x := is.Call(s, "Bash")
		leaves = append(leaves, is.Leaves(is.Start(s), d, x, is.End(s))...)
	}
	l.Add(t, leaves...)
	ts.Check(os.WriteFile(ts.MkAbs(args[0])+".vkey", []byte(k.VKey+"\n"), 0o644))
}
