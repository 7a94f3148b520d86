// Command docket is the user CLI of Docket: it gates agent tool calls with a
// Cedar policy, signs receipts into per-session chains, submits them to a
// transparency log and verifies them offline.
//
// Run "docket help" for the commands. They are in package
// github.com/docketlog/docket/internal/cli/docketcmd.
package main

import (
	"context"
	"os"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/internal/cli/docketcmd"
	// Forwards `docket hook pre` to the project's gate daemon before the
	// other packages initialise (see its comment).
	_ "github.com/docketlog/docket/internal/hookd/fast"
)

func main() {
	confine.Stage() // the confined stage of docket exec: never returns
	os.Exit(docketcmd.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
