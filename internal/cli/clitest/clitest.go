// Package clitest runs Docket's commands inside a test binary, the way
// testscript does (age's cmd/age tests are the model): Main installs copies
// of the test binary named docket, docket-log and docket-witness in a
// directory on $PATH, and a copy started under one of those names runs that
// command instead of the tests. Scenarios and tests exec them as they would
// the shipped binaries, without building any, and with coverage.
//
// The docket of the test binary also injects the pre hook faults the
// fail-closed tests need, named by $DOCKET_TEST_FAULT; the shipped binary
// has none:
//
//	panic   the pre hook panics while deciding
//	hang    it outlives its deadline
//	signal  it says "docket: test: waiting for a signal" on stderr (docket
//	        takes SIGINT and SIGTERM before any command runs), and waits for one
package clitest

import (
	"context"
	"fmt"
	"github.com/docketlog/docket/confine"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/docketlog/docket/internal/cli/docketcmd"
	"github.com/docketlog/docket/internal/cli/logcmd"
	"github.com/docketlog/docket/internal/cli/witnesscmd"
)

// Main is a TestMain body: it runs the command the test binary was started
// as, or else the tests with the commands on $PATH. It does not return.
func Main(m testscript.TestingM) {
	confine.Stage() // docket exec's confined stage re-executes this binary
	// Built with -race, each command would sleep a second at exit
	// (GORACE's atexit_sleep_ms) before reporting races that show only
	// then; the tests start hundreds of them.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(m, map[string]func(){
		"docket": func() {
			ctx := context.Background()
			if f := fault(os.Getenv("DOCKET_TEST_FAULT")); f != nil {
				ctx = docketcmd.WithFault(ctx, f)
			}
			os.Exit(docketcmd.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"docket-log": func() {
			os.Exit(logcmd.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		"docket-witness": func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := witnesscmd.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		},
	})
}

// fault returns the pre hook fault called name, or nil.
func fault(name string) docketcmd.Fault {
	switch name {
	case "panic":
		return func(io.Writer) func(string) {
			return func(string) { panic("injected fault") }
		}
	case "hang":
		return func(io.Writer) func(string) {
			return func(string) { time.Sleep(time.Hour) }
		}
	case "signal":
		return func(stderr io.Writer) func(string) {
			return func(string) {
				fmt.Fprintln(stderr, "docket: test: waiting for a signal")
				time.Sleep(time.Hour)
			}
		}
	}
	return nil
}
