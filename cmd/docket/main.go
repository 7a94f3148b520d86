// Command docket is the user CLI of Docket: it gates agent tool calls with a
// Cedar policy, signs receipts into per-session chains, submits them to a
// transparency log and verifies them offline.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
)

const usage = `Usage:
    docket <command> [options] [arguments]

Commands:
    demo        show what Docket does, on embedded defaults
    keygen      make an issuer, log or witness key
    verify      verify receipts and receipt chains offline
    init        set up Docket hooks, key and policy in a project
    hook        run as an agent hook (pre, post, post-failure, session-start, session-end)
    doctor      check that the installed hook really blocks
    policy      check a policy or evaluate a hook event against it
    sync        submit pending receipts to the log and store their proofs

Run "docket <command> -h" for a command's options.

Exit codes:
    0  success (verify: every receipt valid)
    1  verify: some receipt invalid
    2  hook pre: the call is denied; verify: undecidable; other commands: error
`

// commands maps each subcommand to its implementation. A command returns
// the process exit code.
var commands = map[string]func(args []string) int{
	"demo":   runDemo,
	"keygen": runKeygen,
	"verify": runVerify,
	"init":   runInit,
	"hook":   runHook,
	"doctor": runDoctor,
	"policy": runPolicy,
	"sync":   runSync,
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "-help" || name == "--help" || name == "help" {
		fmt.Fprint(os.Stdout, usage)
		return
	}
	run, ok := commands[name]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		errorf("unknown command %q", name)
		hintf("commands are %v", names)
		os.Exit(2)
	}
	os.Exit(run(os.Args[2:]))
}

// errorf prints an error on stderr the way every docket command does.
func errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "docket: error: "+format+"\n", args...)
}

// hintf prints a hint on stderr.
func hintf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "docket: hint: "+format+"\n", args...)
}

// warnf prints a warning on stderr.
func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "docket: warning: "+format+"\n", args...)
}

// flagExit is the exit code for a command whose flags did not parse: 0
// after -h printed its usage, 2 for a bad flag (already reported).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
