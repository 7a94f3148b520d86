package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/docketlog/docket/disclosure"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const discloseUsage = `Usage:
    docket disclose RECEIPT -o FILE

Writes a disclosure of one logged call: the decision receipt named by its
hash (sha256:<hex> as docket show -json prints it, or 8 or more of its hex
digits), the exact input the journal kept for it — the bytes whose SHA-256
is the receipt's tool_input_hash, or with the salt its tool_input_commitment
— and the receipt's log proof. A third party checks it with
docket verify -disclosure FILE and the issuer's key (and the log's key and
witness policy): it shows that one input, nothing of any other call.

Options:
    -o FILE   where to write the disclosure (mode 0600: it holds an input)
`

func runDisclose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket disclose", discloseUsage, stderr)
	out := fs.String("o", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	rest := fs.Args()
	if len(rest) > 0 { // RECEIPT -o FILE: the flags after the argument
		if err := fs.Parse(rest[1:]); err != nil {
			return flagExit(err)
		}
		rest = append(rest[:1], fs.Args()...)
	}
	if len(rest) != 1 || *out == "" {
		errorf(stderr, "disclose: want RECEIPT and -o FILE")
		hintf(stderr, "docket show -json SESSION prints each receipt_hash")
		return 2
	}
	project, ok := findProject(stderr, "disclose")
	if !ok {
		return 2
	}
	d, err := disclosure.Make(store.Open(project), rest[0])
	if err != nil {
		errorf(stderr, "disclose: %v", err)
		return 2
	}
	if err := durable.Create(*out, d.Marshal(), 0o600); err != nil {
		errorf(stderr, "disclose: %v", err)
		return 2
	}
	proof := "with its log proof"
	if d.Proof == "" {
		proof = "without a log proof (run docket sync, then disclose again)"
	}
	fmt.Fprintf(stdout, "wrote the disclosure of receipt %s to %s, %s\n", rest[0], *out, proof)
	return 0
}

// readLimited reads a file of at most limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, err
}

// verifyDisclosure is docket verify -disclosure FILE.
func verifyDisclosure(path string, keys *receipts.KeySet, logKey, witnessPolicy string, stdout, stderr io.Writer) int {
	data, err := readLimited(path, disclosure.MaxSize)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	v, err := newProofVerifier(logKey, witnessPolicy)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	if v == nil {
		warnf(stderr, "no -log-key: the disclosure's log proof is not checked")
	}
	got, err := disclosure.Verify(data, keys, v)
	var oe *receipts.OpenError
	switch {
	case errors.As(err, &oe):
		fmt.Fprintf(stdout, "%s: %v: %s: %s\n", path, oe.Result.Outcome, oe.Result.Cause, oe.Result.Detail)
		if oe.Result.Outcome == receipts.Invalid {
			return 1
		}
		return 2
	case errors.Is(err, disclosure.ErrMismatch), errors.Is(err, disclosure.ErrBadProof):
		fmt.Fprintf(stdout, "%s: invalid: %v\n", path, err)
		return 1
	case err != nil:
		fmt.Fprintf(stdout, "%s: undecidable: %v\n", path, err)
		return 2
	}
	p := got.Receipt.Payload
	fmt.Fprintf(stdout, "%s: valid: session %s receipt %d, %s %s %s at %s\n", path, p.SessionID, p.Sequence, p.ToolName, p.Decision, p.Reason, p.IssuedAt)
	fmt.Fprintf(stdout, "input: %s\n", got.Input)
	if got.Proof != nil {
		fmt.Fprintf(stdout, "in the log at index %d (checkpoint of size %d)\n", got.Proof.Index, got.Proof.Size)
	}
	return 0
}
