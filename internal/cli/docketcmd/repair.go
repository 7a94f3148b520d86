package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/docketlog/docket/store"
)

const repairUsage = `Usage:
    docket repair SESSION

Moves a session chain's damaged tail aside: from the first line that is
not a receipt continuing the chain to its end, the bytes go to a file
beside the chain (.docket/sessions/SESSION.jsonl.damaged-N, kept for
inspection), and a chain_repaired lifecycle receipt, signed with the
issuer key, records what was moved (its size and SHA-256): an auditor sees
that the chain was repaired and where. Until then every call of the
session is refused, since its receipts cannot be chained.

A torn last line (an append cut short by a crash) is not a damaged tail:
the next append moves it to SESSION.jsonl.torn and goes on; docket status
lists both kinds.

Exit codes:
    0  the tail was moved aside and the repair signed
    1  the chain has no damaged tail
    2  error
`

func runRepair(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket repair", repairUsage, stderr)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		errorf(stderr, "repair: want one SESSION")
		return 2
	}
	project, ok := findProject(stderr, "repair")
	if !ok {
		return 2
	}
	r, err := store.Open(project).Repair(fs.Arg(0))
	switch {
	case errors.Is(err, store.ErrNothingToRepair):
		fmt.Fprintf(stdout, "session %s: %v\n", fs.Arg(0), err)
		return 1
	case err != nil:
		errorf(stderr, "repair: %v", err)
		return 2
	}
	fmt.Fprintf(stdout, "session %s: kept %d receipts, moved %d damaged bytes to %s, signed the repair as receipt %d\n",
		fs.Arg(0), r.Kept, r.MovedBytes, rel(project, r.MovedTo), r.Sequence)
	return 0
}
