// Command docket-log runs Docket's transparency log: a Tessera log on POSIX
// storage that accepts receipts (POST /add), answers each with a
// c2sp.org/tlog-proof@v1, and serves the C2SP tlog-tiles read API.
//
// Run "docket-log -h" for the options. The command is in package
// github.com/docketlog/docket/internal/cli/logcmd.
package main

import (
	"context"
	"os"

	"github.com/docketlog/docket/internal/cli/logcmd"
)

func main() {
	os.Exit(logcmd.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
