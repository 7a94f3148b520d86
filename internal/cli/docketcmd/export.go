package docketcmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/docketlog/docket/bundle"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/store"
)

const exportUsage = `Usage:
    docket export -o DIR [-session ID]...
    docket export trace -session ID [options]   (a TRACE Trust Record: docket export trace -h)

Writes what an operator hands an auditor, in one directory: the session
chains, their tlog-proofs (one .tlog-proof file per receipt, as
c2sp.org/tlog-proof names them), the issuer's JWKS, the policy files, the witness
policy and the log's key, with a manifest (docket-bundle.json). docket
verify and docket audit take the directory as it is.
`

func runExport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "trace" {
		return runExportTrace(ctx, args[1:], stdin, stdout, stderr)
	}
	fs := newFlagSet("export", exportUsage, stderr)
	out := fs.String("o", "", "")
	var sessions multiFlag
	fs.Var(&sessions, "session", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *out == "" {
		errorf(stderr, "export: -o DIR is required")
		return 2
	}
	project, ok := findProject(stderr, "export")
	if !ok {
		return 2
	}
	st := store.Open(project)
	have, err := st.Sessions()
	if err != nil {
		errorf(stderr, "export: %v", err)
		return 2
	}
	for _, want := range sessions {
		if !slices.Contains(have, store.SessionName(want)) {
			errorf(stderr, "export: no session %q in %s", want, project)
			if len(have) > 0 {
				hintf(stderr, "the sessions are: %s", strings.Join(have, " "))
			} else {
				hintf(stderr, "the project has no sessions yet")
			}
			return 2
		}
	}
	n, err := bundle.Write(st, *out, sessions)
	if err != nil {
		errorf(stderr, "export: %v", err)
		return 2
	}
	fmt.Fprintf(stdout, "docket: exported %s to %s\n", plural.Count(n, "session"), *out)
	return 0
}

// bundleDefaults fills in the flags a bundle can answer: its log, log key,
// witness policy and issuer keys.
func bundleDefaults(b *bundle.Bundle, lf *logFlags, jwks *string) {
	if b == nil {
		return
	}
	if lf.logKey == "" {
		lf.logKey = b.LogKey
	}
	if lf.log == "" {
		lf.log = b.LogURL
	}
	if lf.policy == "" {
		lf.policy = b.WitnessPolicyFile()
	}
	if *jwks == "" {
		*jwks = b.JWKSFile()
	}
}
