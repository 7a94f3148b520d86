package docketcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/plural"
)

const verifyEvidenceUsage = `Usage:
    docket verify-evidence [-json] -log-key VKEY FILE...

Checks evidence files written by docket audit and docket monitor with the
log's public key alone: the signed checkpoints, the inclusion proofs, the
receipts' signatures, and that together they prove what the file says.
Forks and split views are proven when the log's own tiles lead to its newer
root and not to its older one; equivocation when the issuer signed two
receipts for one position; a withheld receipt when it is in the log.
Absences (a gap, a dropped receipt) are shown by a scan, not a file: such a
file proves only that its entries are in the log.

A file with two members whose names differ only in case, or a member
evidence does not define, is malformed.

With -json, one object per file: {"file", "result": "proven" | "not_proven"
| "bad", "kind", "message"}.

Exit status: 0 no file proves misbehaviour, 1 some file proves it, 2 some
file is malformed, of a kind this docket does not know, or does not verify.
`

// evidenceResult is one line of docket verify-evidence -json.
type evidenceResult struct {
	File    string `json:"file"`
	Result  string `json:"result"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

func runVerifyEvidence(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify-evidence", verifyEvidenceUsage, stderr)
	logKey := fs.String("log-key", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	v, err := c2sp.LoadProofVerifier(*logKey, "")
	if err != nil || fs.NArg() == 0 {
		errorf(stderr, "verify-evidence: -log-key VKEY and at least one FILE are required (%v)", err)
		return 2
	}
	code := 0
	for _, name := range fs.Args() {
		b, err := os.ReadFile(name)
		var ev *audit.Evidence
		if err == nil {
			ev, err = audit.ParseEvidence(b)
		}
		var msg string
		if err == nil {
			msg, err = audit.VerifyEvidence(ev, v.LogKey())
		}
		r := evidenceResult{File: name, Message: msg}
		if ev != nil {
			r.Kind = ev.Kind
		}
		switch {
		case err == nil:
			r.Result = "proven"
			code = max(code, 1)
		case errors.Is(err, audit.ErrNotProven):
			r.Result, r.Message = "not_proven", err.Error()
		default:
			r.Result, r.Message = "bad", err.Error()
			code = 2
		}
		if *asJSON {
			b, _ := json.Marshal(r)
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		switch r.Result {
		case "proven":
			fmt.Fprintf(stdout, "%s: PROVEN %s: %s\n", name, ev.Kind, msg)
			fmt.Fprint(stdout, securityReport(ev, msg))
		case "not_proven":
			fmt.Fprintf(stdout, "%s: not proven: %v\n", name, err)
		default:
			fmt.Fprintf(stdout, "%s: bad evidence: %v\n", name, err)
		}
	}
	return code
}

// securityReport renders proven evidence the way x/mod's checksum database
// client reports a misbehaving server.
func securityReport(ev *audit.Evidence, msg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "SECURITY ERROR\nThe log misbehaved: %s.\n\n", msg)
	for i, cp := range append([]string{ev.Checkpoint}, ev.Checkpoints...) {
		if cp == "" {
			continue
		}
		fmt.Fprintf(&b, "checkpoint %d:\n%s\n", i, indentText(cp))
	}
	if len(ev.ConsistencyProof) > 0 {
		fmt.Fprintf(&b, "consistency proof:\n%s\n", indentText(strings.Join(ev.ConsistencyProof, "\n")))
	}
	for _, e := range ev.Entries {
		leaf := e.Leaf
		if e.LeafBase64 != "" {
			leaf = "(not UTF-8; base64) " + e.LeafBase64
		}
		fmt.Fprintf(&b, "entry %d:\n%s\n", e.Index, indentText(leaf))
	}
	return b.String()
}

func indentText(s string) string {
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

const verifyIndexUsage = `Usage:
    docket verify-index [-json] -log-key VKEY FILE

Checks an issuer's verifiable index (from the explorer's "download" link):
the checkpoint is the log's, every listed entry is in it and signed by the
issuer, and it reports how far the issuer's own issuer_sequence counter
shows the list complete.

With -json, one object: {"entries", "complete", "high_water", "legacy",
"gaps": [{"from", "to"}]}.

Exit status: 0 complete as far as the issuer's counter shows, 1 gaps, 2 the
index does not verify.
`

func runVerifyIndex(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify-index", verifyIndexUsage, stderr)
	logKey := fs.String("log-key", "", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	v, err := c2sp.LoadProofVerifier(*logKey, "")
	if err != nil || fs.NArg() != 1 {
		errorf(stderr, "verify-index: -log-key VKEY and one FILE are required (%v)", err)
		return 2
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		errorf(stderr, "verify-index: %v", err)
		return 2
	}
	s, err := audit.VerifyIssuerIndex(b, v.LogKey())
	if err != nil {
		errorf(stderr, "verify-index: %v", err)
		return 2
	}
	if *asJSON {
		if s.Gaps == nil {
			s.Gaps = []audit.Gap{} // "gaps": [], not null
		}
		b, _ := json.Marshal(s)
		fmt.Fprintf(stdout, "%s\n", b)
		return min(len(s.Gaps), 1)
	}
	fmt.Fprintf(stdout, "%s verified; issuer_sequence complete up to %d; the issuer's latest checkpoint counts %d; %d without issuer_sequence\n",
		plural.Count(s.Entries, "entry"), s.Complete, s.HighWater, s.Legacy)
	if len(s.Gaps) > 0 {
		// One line per run of missing numbers, however long.
		fmt.Fprintf(stdout, "missing issuer_sequence: %s\n", plural.Count(len(s.Gaps), "run"))
		for _, g := range s.Gaps {
			fmt.Fprintf(stdout, "    %s\n", g)
		}
		return 1
	}
	return 0
}
