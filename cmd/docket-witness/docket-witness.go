// Command docket-witness is a transparency log witness: it serves the C2SP
// tlog-witness protocol, cosigning (cosignature/v1, Ed25519) the checkpoints of
// the logs it is configured with, only when they are consistent with the
// latest checkpoint it cosigned for that log. See package
// github.com/docketlog/docket/witness for the HTTP interface and status codes.
//
// Usage:
//
//	docket-witness -key FILE -db FILE -logs FILE [-listen ADDR] [-rate N] [-v]
//
// Run "docket-witness -h" for the options. The command is in package
// github.com/docketlog/docket/internal/cli/witnesscmd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/docketlog/docket/internal/cli/witnesscmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := witnesscmd.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
