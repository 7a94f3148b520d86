package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/receipts"
)

const verifyUsage = `Usage:
    docket verify [-key HEX | -jwks FILE | -key-file FILE] [options] FILE...

Verifies receipts offline. A FILE ending in .jsonl is one chain, a receipt a
line, replayed in order: every signature, every previousReceiptHash link,
consecutive sequence numbers, one session, and every execution linked to an
earlier allow decision. Any other FILE is one receipt. Keys never come from
inside a receipt.

Options:
    -key HEX             trust this Ed25519 public key (64 hex characters)
    -jwks FILE           trust the keys of a JWKS file (valid_from/valid_until honoured)
    -key-file FILE       trust the key in FILE (key file, JWKS or hex)
    -policy-digest D     every receipt must carry policy_digest D
    -session ID          every receipt must belong to session ID
    -strict              treat legacy chain links (bare hex, payload-only) as invalid
    -json                print one JSON result per receipt

Exit status: 0 every receipt valid, 1 some receipt invalid, 2 some receipt
undecidable (no trusted key, malformed, unknown shape) and none invalid.

Examples:
    docket verify -key-file .docket/issuer.key .docket/sessions/*.jsonl
    docket verify -jwks issuers.json -json receipt.json
`

// fileResult is one verified file.
type fileResult struct {
	name    string
	results []receipts.Result
	err     error // the file could not be read: undecidable
}

func runVerify(args []string) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, verifyUsage) }
	keyHex := fs.String("key", "", "")
	jwksFile := fs.String("jwks", "", "")
	keyFile := fs.String("key-file", "", "")
	var opts receipts.Options
	fs.StringVar(&opts.PolicyDigest, "policy-digest", "", "")
	fs.StringVar(&opts.SessionID, "session", "", "")
	strict := fs.Bool("strict", false, "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		errorf("verify: no files given")
		hintf("docket verify -key-file .docket/issuer.key .docket/sessions/*.jsonl")
		return 2
	}
	keys, err := loadKeys(*keyHex, *jwksFile, *keyFile)
	if err != nil {
		errorf("verify: %v", err)
		return 2
	}
	if keys == nil {
		warnf("no trusted key given (-key, -jwks or -key-file): every receipt is undecidable")
	}
	opts.Keys = keys
	files := make([]fileResult, fs.NArg())
	for i, name := range fs.Args() {
		files[i] = verifyFile(name, opts)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	return report(w, files, *asJSON, *strict)
}

func loadKeys(keyHex, jwksFile, keyFile string) (*receipts.KeySet, error) {
	given := 0
	for _, s := range []string{keyHex, jwksFile, keyFile} {
		if s != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return nil, fmt.Errorf("give only one of -key, -jwks and -key-file")
	case keyHex != "":
		pub, err := receipts.ParsePublicKeyHex(keyHex)
		if err != nil {
			return nil, err
		}
		return receipts.PinnedKey(pub), nil
	case jwksFile != "":
		data, err := os.ReadFile(jwksFile)
		if err != nil {
			return nil, err
		}
		return receipts.ParseJWKS(data)
	case keyFile != "":
		return receipts.LoadKeySet(keyFile)
	}
	return nil, nil
}

// maxChainFile bounds the chain files verify reads into memory.
const maxChainFile = 1 << 30

func verifyFile(name string, opts receipts.Options) fileResult {
	f, err := os.Open(name)
	if err != nil {
		return fileResult{name: name, err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxChainFile+1))
	if err != nil {
		return fileResult{name: name, err: err}
	}
	if len(data) > maxChainFile {
		return fileResult{name: name, err: fmt.Errorf("file larger than %d bytes", maxChainFile)}
	}
	if strings.HasSuffix(name, ".jsonl") {
		lines := receipts.SplitLines(data)
		if len(lines) == 0 {
			return fileResult{name: name, err: fmt.Errorf("no receipts in chain file")}
		}
		return fileResult{name: name, results: receipts.VerifyChain(lines, opts)}
	}
	return fileResult{name: name, results: []receipts.Result{receipts.Verify(data, opts)}}
}

// jsonResult is the -json output for one receipt.
type jsonResult struct {
	File  string `json:"file"`
	Index int    `json:"index"`
	receipts.Result
}

func report(w io.Writer, files []fileResult, asJSON, strict bool) int {
	invalid, undecidable := 0, 0
	enc := json.NewEncoder(w)
	for _, f := range files {
		if f.err != nil {
			undecidable++
			if asJSON {
				enc.Encode(jsonResult{File: f.name, Result: receipts.Result{Outcome: receipts.Undecidable, Cause: "unreadable", Detail: f.err.Error()}})
			} else {
				fmt.Fprintf(w, "%s: undecidable: %v\n", f.name, f.err)
			}
			continue
		}
		counts, legacy := [3]int{}, 0
		for i := range f.results {
			r := &f.results[i]
			if r.Legacy != "" {
				legacy++
				if strict && r.Outcome == receipts.Valid {
					r.Outcome, r.Cause, r.Detail = receipts.Invalid, "legacy_link", "legacy convention refused by -strict: "+r.Legacy
				}
			}
			counts[r.Outcome]++
			if asJSON {
				enc.Encode(jsonResult{File: f.name, Index: i + 1, Result: *r})
			} else if r.Outcome != receipts.Valid {
				fmt.Fprintf(w, "%s: receipt %d: %v: %s: %s\n", f.name, i+1, r.Outcome, r.Cause, r.Detail)
			}
		}
		invalid += counts[receipts.Invalid]
		undecidable += counts[receipts.Undecidable]
		if asJSON {
			continue
		}
		status := "valid"
		switch {
		case counts[receipts.Invalid] > 0:
			status = "INVALID"
		case counts[receipts.Undecidable] > 0:
			status = "UNDECIDABLE"
		}
		note := ""
		if legacy > 0 {
			note = fmt.Sprintf(" (%d accepted under a legacy convention)", legacy)
		}
		fmt.Fprintf(w, "%s: %s: %d receipts, %d valid, %d invalid, %d undecidable%s\n",
			filepath.ToSlash(f.name), status, len(f.results), counts[receipts.Valid], counts[receipts.Invalid], counts[receipts.Undecidable], note)
	}
	switch {
	case invalid > 0:
		return 1
	case undecidable > 0:
		return 2
	}
	return 0
}
