package docketcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/receipts"
)

const picUsage = `Usage:
    docket pic verify [options] PROPOSAL.json

Verifies a PIC action proposal as docket mcp does before a call runs:
schema, limits, tool binding, evidence (file hashes inside the evidence
root, signatures against the keyring) and the causal contract (money,
irreversible and privacy actions need a claim backed by trusted, signed
evidence). Prints the result as JSON.

Options:
    -tool NAME            the tool the proposal must be bound to
    -evidence-root DIR    directory file:// evidence is read from (default: the proposal's directory)
    -keys FILE            PIC keyring for signature evidence

Exit codes:
    0  verified
    1  refused (the PIC error code is printed)
    2  usage or I/O error
`

func runPIC(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, picUsage)
			return 0
		}
		fmt.Fprint(stderr, picUsage)
		return 2
	}
	fs := newFlagSet("docket pic verify", picUsage, stderr)
	tool := fs.String("tool", "", "")
	root := fs.String("evidence-root", "", "")
	keys := fs.String("keys", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		errorf(stderr, "pic verify: one PROPOSAL.json is required")
		return 2
	}
	name := fs.Arg(0)
	data, err := safefile.Read(ctx, name, receipts.MaxDocumentSize)
	if err != nil {
		errorf(stderr, "pic verify: %v", err)
		return 2
	}
	o := pic.Options{Tool: *tool, EvidenceRoot: *root}
	if o.EvidenceRoot == "" {
		o.EvidenceRoot = filepath.Dir(name)
	}
	if *keys != "" {
		if o.Keys, err = loadKeyring(*keys); err != nil {
			errorf(stderr, "pic verify: -keys: %v", err)
			return 2
		}
	}
	res, err := pic.Verify(ctx, data, o)
	var pe *pic.Error
	if errors.As(err, &pe) {
		out, _ := json.MarshalIndent(map[string]any{"verified": false, "code": pe.Code, "message": pe.Msg}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", out)
		return 1
	}
	if err != nil {
		errorf(stderr, "pic verify: %v", err)
		return 2
	}
	out, _ := json.MarshalIndent(map[string]any{"verified": true, "impact": res.Impact, "tool": res.Tool,
		"digest": res.Digest, "verified_evidence": res.Verified, "trusted_evidence": res.Trusted}, "", "  ")
	fmt.Fprintf(stdout, "%s\n", out)
	return 0
}

// loadKeyring reads a PIC keyring file (a regular file: a FIFO named by
// mistake must not hang docket mcp's start).
func loadKeyring(path string) (*pic.Keyring, error) {
	data, err := safefile.Read(context.Background(), path, receipts.MaxDocumentSize)
	if err != nil {
		return nil, err
	}
	return pic.ParseKeyring(data)
}
