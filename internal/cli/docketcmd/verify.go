package docketcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/docketlog/docket/bundle"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const verifyUsage = `Usage:
    docket verify [-key HEX | -jwks FILE | -key-file FILE] [options] FILE...
    docket verify -trace RECORD [options]   (a TRACE Trust Record: docket verify -trace x -h)

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
    -log-key VKEY        also require every receipt's log proof (c2sp.org/tlog-proof@v1),
                         checked against this log verifier key
    -witness-policy FILE with -log-key: every proof's checkpoint must satisfy this
                         C2SP tlog-policy witness quorum
    -proofs DIR          with -log-key: where the proofs are, as DIR/<sequence>.tlog-proof
                         (default: a chain of a .docket store or an export bundle,
                         sessions/NAME.jsonl, has its proofs in that store or bundle)
    -disclosure FILE     check a disclosure (docket disclose) instead of files: the
                         receipt under the trusted key, the input against its
                         tool_input_hash or salted tool_input_commitment, and with
                         -log-key its log proof; prints the disclosed input

In a project, with none of -key, -jwks, -key-file and -log-key, verify trusts
the project's issuer key and, with a log configured, its log key and witness
policy (requiring proofs), and says so on stderr.

With -log-key a receipt is valid only if its proof shows it in the log under
a checkpoint the log signed (and the witness quorum cosigned): a proof that
fails is invalid, a missing proof undecidable.

Exit status: 0 every receipt valid, 1 some receipt invalid, 2 some receipt
undecidable (no trusted key, malformed, unknown shape, no proof) and none invalid.

A directory written by docket export is taken as it is: its chains, with
their proofs, its issuer keys, log key and witness policy (unless the
flags give others).

Examples:
    docket verify -key-file .docket/issuer.key .docket/sessions/*.jsonl
    docket verify bundle/
    docket verify -key-file .docket/issuer.key -log-key "$(cat log.vkey)" -witness-policy witnesses.policy .docket/sessions/*.jsonl
    docket verify -jwks issuers.json -json receipt.json
`

// fileResult is one verified file.
type fileResult struct {
	name    string
	lines   [][]byte
	results []receipts.Result
	// logIndex holds, with -log-key, each receipt's proven index in the log (-1: none).
	logIndex []int64
	err      error // the file could not be read: undecidable
}

func runVerify(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if slices.ContainsFunc(args, isTraceFlag) {
		return runVerifyTrace(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("verify", verifyUsage, stderr)
	keyHex := fs.String("key", "", "")
	jwksFile := fs.String("jwks", "", "")
	keyFile := fs.String("key-file", "", "")
	var opts receipts.Options
	fs.StringVar(&opts.PolicyDigest, "policy-digest", "", "")
	fs.StringVar(&opts.SessionID, "session", "", "")
	strict := fs.Bool("strict", false, "")
	asJSON := fs.Bool("json", false, "")
	logKey := fs.String("log-key", "", "")
	witnessPolicy := fs.String("witness-policy", "", "")
	proofsDir := fs.String("proofs", "", "")
	disclosed := fs.String("disclosure", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *disclosed != "" {
		if fs.NArg() > 0 {
			errorf(stderr, "verify: -disclosure takes no other files")
			return 2
		}
		if *keyHex == "" && *jwksFile == "" && *keyFile == "" && *logKey == "" {
			expandStores(nil, false, keyFile, logKey, witnessPolicy, stderr)
		}
		keys, err := loadKeys(*keyHex, *jwksFile, *keyFile)
		if err != nil {
			errorf(stderr, "verify: %v", err)
			return 2
		}
		return verifyDisclosure(*disclosed, keys, *logKey, *witnessPolicy, stdout, stderr)
	}
	if fs.NArg() == 0 {
		errorf(stderr, "verify: no files given")
		hintf(stderr, "docket verify -key-file .docket/issuer.key .docket/sessions/*.jsonl")
		return 2
	}
	names, err := expandBundles(ctx, fs.Args(), keyHex, jwksFile, keyFile, logKey, witnessPolicy, stderr)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	// Keys from flags, or from a bundle: the project's are not added.
	pinned := *keyHex != "" || *jwksFile != "" || *keyFile != "" || *logKey != ""
	if names, err = expandStores(names, pinned, keyFile, logKey, witnessPolicy, stderr); err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	keys, err := loadKeys(*keyHex, *jwksFile, *keyFile)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	if keys == nil {
		warnf(stderr, "no trusted key given (-key, -jwks or -key-file), and not in a project: every receipt is undecidable")
	}
	opts.Keys = keys
	proofs, err := newProofVerifier(*logKey, *witnessPolicy)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	if proofs == nil && (*witnessPolicy != "" || *proofsDir != "") {
		errorf(stderr, "verify: -witness-policy and -proofs need -log-key")
		return 2
	}
	files := make([]fileResult, len(names))
	for i, name := range names {
		files[i] = verifyFile(name, opts)
		if proofs != nil {
			checkProofs(&files[i], proofs, *proofsDir)
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	return report(w, files, *asJSON, *strict)
}

// expandStores replaces each store directory among names (a project's
// .docket, or the project directory itself) by its session chains. Unless
// keys were given with flags, the issuer key and the log configuration
// come from the store named, or else from the project the command runs in
// (store.FindProject): docket verify in a project checks its receipts
// against what the project knows, and says so.
func expandStores(names []string, pinned bool, keyFile, logKey, policy *string, stderr io.Writer) ([]string, error) {
	var out []string
	var from *store.Store
	for _, n := range names {
		dir := n
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			out = append(out, n)
			continue
		}
		if filepath.Base(filepath.Clean(dir)) != store.DirName && store.IsProject(dir) {
			dir = filepath.Join(dir, store.DirName)
		}
		st := store.OpenDir(dir)
		sessions, err := st.Sessions()
		if err != nil {
			return nil, err
		}
		if len(sessions) == 0 {
			return nil, fmt.Errorf("%s: no session chains (a .docket directory or a project holds them in sessions/)", n)
		}
		for _, s := range sessions {
			out = append(out, st.ChainPath(s))
		}
		if from == nil {
			from = st
		}
	}
	if pinned {
		return out, nil
	}
	if from == nil {
		project, err := store.FindProject()
		if err != nil {
			return out, nil // not in a project: keys come from flags only
		}
		from = store.Open(project)
	}
	if !from.HasKey() {
		return out, nil
	}
	*keyFile = from.KeyPath()
	what := "the issuer key " + from.KeyPath()
	if cfg, err := from.Config(); err == nil && cfg.HasLog() {
		*logKey, *policy = cfg.LogKey, cfg.WitnessPolicyPath(from.Project())
		what += " and the log key and witness policy of " + from.ConfigPath() + " (proofs required)"
	}
	fmt.Fprintf(stderr, "docket: verify: trusting %s\n", what)
	return out, nil
}

// newProofVerifier returns the verifier of log proofs under the log key
// and the witness policy file, or nil without a log key.
func newProofVerifier(logKey, witnessPolicy string) (*c2sp.ProofVerifier, error) {
	if logKey == "" {
		return nil, nil
	}
	return c2sp.LoadProofVerifier(logKey, witnessPolicy)
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
		return fileResult{name: name, lines: lines, results: receipts.VerifyChain(lines, opts)}
	}
	return fileResult{name: name, lines: [][]byte{data}, results: []receipts.Result{receipts.Verify(data, opts)}}
}

// expandBundles replaces each bundle directory (docket export) among args
// by its session chains, and takes the bundle's issuer keys, log key and
// witness policy for the flags that were not given.
func expandBundles(ctx context.Context, args []string, keyHex, jwks, keyFile, logKey, policy *string, stderr io.Writer) ([]string, error) {
	var out []string
	for _, a := range args {
		b, err := bundle.Open(ctx, a)
		if errors.Is(err, bundle.ErrNotBundle) {
			out = append(out, a)
			continue
		}
		if err != nil {
			return nil, err
		}
		if *keyHex == "" && *keyFile == "" {
			lf := logFlags{logKey: *logKey, policy: *policy, log: "-"}
			given := *jwks != ""
			bundleDefaults(b, &lf, jwks)
			warnBundleTrust(stderr, a, !given && *jwks != "", *logKey == "" && lf.logKey != "", *policy == "" && lf.policy != "")
			*logKey, *policy = lf.logKey, lf.policy
		}
		chains, err := b.ChainFiles()
		if err != nil {
			return nil, err
		}
		out = append(out, chains...)
	}
	return out, nil
}

// projectDefaults gives docket audit, run in a project with none of the
// key and log flags, the project's issuer key, log, log key and witness
// policy, and says so.
func projectDefaults(lf *logFlags, jwks, keyFile *string, stderr io.Writer) {
	if lf.log != "" || lf.logKey != "" || *jwks != "" || *keyFile != "" {
		return
	}
	project, err := store.FindProject()
	if err != nil {
		return
	}
	st := store.Open(project)
	cfg, err := st.Config()
	if err != nil || !cfg.HasLog() || !st.HasKey() {
		return
	}
	lf.log, lf.logKey, lf.policy, *keyFile = cfg.LogURL, cfg.LogKey, cfg.WitnessPolicyPath(project), st.KeyPath()
	fmt.Fprintf(stderr, "docket: trusting the issuer key %s and the log of %s\n", st.KeyPath(), st.ConfigPath())
}

// warnBundleTrust warns that verify or audit trusts what a bundle brought
// rather than keys the operator pinned: whoever wrote the bundle chose
// them.
func warnBundleTrust(stderr io.Writer, name string, issuers, logKey, policy bool) {
	var took []string
	if issuers {
		took = append(took, "issuer keys (pin with -jwks or -key-file)")
	}
	if logKey {
		took = append(took, "log key (pin with -log-key)")
	}
	if policy {
		took = append(took, "witness policy (pin with -witness-policy)")
	}
	if len(took) > 0 {
		warnf(stderr, "%s: trusting the bundle's own %s: whoever wrote the bundle chose them", name, strings.Join(took, ", "))
	}
}

// checkProofs requires a verified log proof for every valid receipt of f,
// read from dir/<sequence>.tlog-proof (or .proof). With no dir, a chain of
// a store or an export bundle (store.ChainOf) has its proofs in that store.
func checkProofs(f *fileResult, v *c2sp.ProofVerifier, dir string) {
	if f.err != nil {
		return
	}
	readProof := func(seq int64) ([]byte, error) { return store.ReadProofFile(dir, strconv.FormatInt(seq, 10)) }
	if dir == "" {
		st, session, ok := store.ChainOf(f.name)
		var proofs *store.ProofSet
		err := fs.ErrNotExist
		if ok {
			proofs, err = st.Proofs(session)
		}
		readProof = func(seq int64) ([]byte, error) {
			if err != nil {
				return nil, err
			}
			if b, ok := proofs.Get(seq); ok {
				return b, nil
			}
			return nil, fs.ErrNotExist
		}
		dir = filepath.Dir(filepath.Dir(f.name))
	}
	f.logIndex = make([]int64, len(f.results))
	for i := range f.results {
		r := &f.results[i]
		f.logIndex[i] = -1
		if r.Outcome != receipts.Valid {
			continue
		}
		var proof []byte
		rc, err := receipts.Open(f.lines[i], nil)
		if err == nil {
			proof, err = readProof(rc.Payload.Sequence)
		}
		if err != nil || rc.Payload.Sequence == 0 {
			r.Outcome, r.Cause, r.Detail = receipts.Undecidable, c2sp.CauseNoProof, fmt.Sprintf("no log proof in %s (run docket sync)", dir)
			continue
		}
		f.logIndex[i] = v.CheckReceipt(r, f.lines[i], proof)
	}
}

// jsonResult is the -json output for one receipt.
type jsonResult struct {
	File  string `json:"file"`
	Index int    `json:"index"`
	receipts.Result
	LogIndex *int64 `json:"log_index,omitempty"`
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
		counts, legacy, noKey := [3]int{}, 0, 0
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
				jr := jsonResult{File: f.name, Index: i + 1, Result: *r}
				if f.logIndex != nil && f.logIndex[i] >= 0 {
					jr.LogIndex = &f.logIndex[i]
				}
				enc.Encode(jr)
			} else if r.Cause == receipts.CauseNoTrustedKey {
				noKey++ // one line for the chain, below
			} else if r.Outcome != receipts.Valid {
				fmt.Fprintf(w, "%s: receipt %d: %v: %s: %s\n", f.name, i+1, r.Outcome, r.Cause, r.Detail)
			}
		}
		invalid += counts[receipts.Invalid]
		undecidable += counts[receipts.Undecidable]
		if asJSON {
			continue
		}
		if noKey > 0 {
			fmt.Fprintf(w, "%s: %s: undecidable: %s: no trusted key for their kid (give -key, -jwks or -key-file)\n", f.name, plural.Count(noKey, "receipt"), receipts.CauseNoTrustedKey)
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
		if n := reportUnmediated(w, f); n > 0 {
			note += fmt.Sprintf(", %s (tool calls in the agent's record the gate never decided)", plural.Count(n, "unmediated call"))
		}
		if len(f.lines) > 1 && !sessionEnded(f.lines[len(f.lines)-1]) {
			note += ", open: no session_end (a chain alone cannot show it was not cut short)"
		}
		if f.logIndex != nil {
			logged := 0
			for _, x := range f.logIndex {
				if x >= 0 {
					logged++
				}
			}
			note += fmt.Sprintf(", %d proven in the log", logged)
		}
		fmt.Fprintf(w, "%s: %s: %s, %d valid, %d invalid, %d undecidable%s\n",
			filepath.ToSlash(f.name), status, plural.Count(len(f.results), "receipt"), counts[receipts.Valid], counts[receipts.Invalid], counts[receipts.Undecidable], note)
	}
	switch {
	case invalid > 0:
		return 1
	case undecidable > 0:
		return 2
	}
	return 0
}

// sessionEnded reports whether a receipt is a session_end lifecycle receipt.
func sessionEnded(receipt []byte) bool {
	obj, err := strictjson.ParseObject(receipt)
	if err != nil {
		return false
	}
	payload, _ := obj["payload"].(map[string]any)
	return payload["lifecycle_event"] == "session_end"
}
