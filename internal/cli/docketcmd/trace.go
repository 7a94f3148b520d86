package docketcmd

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
	"github.com/docketlog/docket/trace"
)

// The files docket export trace writes, and docket verify -trace looks for
// next to the record.
const (
	traceRecordFile     = "trust-record.json"
	traceTranscriptFile = "transcript.json"
	traceChainFile      = "chain.jsonl"
	traceProofFile      = "last.tlog-proof"
)

const exportTraceUsage = `Usage:
    docket export trace -session ID [-o DIR] [-transcript-uri URI] [-subject ID]
                        [-data-class LABEL] [-no-audit]

Writes a TRACE Trust Record (trace-v0.2) of one session into DIR (default
trace-<session>, which must not exist):

    trust-record.json  the record, signed with the issuer key (cnf.jwk):
                       Ed25519 over its RFC 8785 bytes without "signature"
    transcript.json    the tool transcript, one entry per call, as the
                       canonical bytes whose sha256 the record commits
    chain.jsonl        the session chain the transcript is read from
    last.tlog-proof    the log proof of the chain's last receipt, if synced
    evidence/          docket audit's evidence files, if it found anything

The record's transparency member names last.tlog-proof resolved against the
transcript's URI, so publish DIR as a whole. When .docket/config.json names
a log, docket audit runs over the session first and its result is the
record's appraisal; -no-audit skips it (appraisal status none).

Options:
    -session ID          the agent's session id
    -o DIR               where to write
    -transcript-uri URI  where transcript.json will be published
                         (default: its file:// URI)
    -subject ID          the workload identity, spiffe:// or did: (default:
                         the issuer key as a did:key)
    -data-class LABEL    the data classification (default unclassified)
    -no-audit            do not read the log back for the appraisal

Example:
    docket export trace -session "$SESSION" -o trace -transcript-uri https://evidence.example/s1/transcript.json
    docket verify -trace trace/trust-record.json -key-file .docket/issuer.key -log-key "$VKEY" -max-age 0
`

// runExportTrace is docket export trace.
func runExportTrace(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("export trace", exportTraceUsage, stderr)
	session := fs.String("session", "", "")
	out := fs.String("o", "", "")
	transcriptURI := fs.String("transcript-uri", "", "")
	subject := fs.String("subject", "", "")
	dataClass := fs.String("data-class", "", "")
	noAudit := fs.Bool("no-audit", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *session == "" || fs.NArg() > 0 {
		errorf(stderr, "export trace: -session ID is required")
		return 2
	}
	if *out == "" {
		*out = "trace-" + store.SessionName(*session)
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "export trace: %v", err)
		return 2
	}
	st := store.Open(project)
	e := traceExport{st: st, project: project, session: *session, dir: *out, transcriptURI: *transcriptURI,
		subject: *subject, dataClass: *dataClass, audit: !*noAudit, stderr: stderr}
	rec, err := e.run(ctx)
	if err != nil {
		errorf(stderr, "export trace: %v", err)
		return 2
	}
	fmt.Fprintf(stdout, "docket: wrote the TRACE record of session %s (%d calls, appraisal %s) to %s\n",
		*session, *rec.ToolTranscript.CallCount, rec.Appraisal.Status, filepath.Join(*out, traceRecordFile))
	return 0
}

// traceExport is one run of docket export trace.
type traceExport struct {
	st                                *store.Store
	project, session, dir             string
	transcriptURI, subject, dataClass string
	audit                             bool
	stderr                            io.Writer
}

func (e *traceExport) run(ctx context.Context) (_ *trace.Record, err error) {
	chain, err := e.st.Receipts(e.session)
	if err != nil {
		return nil, err
	}
	if len(chain) == 0 {
		return nil, fmt.Errorf("no session %q in %s", e.session, e.st.Dir)
	}
	s, err := trace.ReadSession(chain)
	if err != nil {
		return nil, err
	}
	key, err := receipts.LoadPrivateKey(e.st.KeyPath())
	if err != nil {
		return nil, err
	}
	transcript, err := trace.MarshalTranscript(s.Calls)
	if err != nil {
		return nil, err
	}
	measurement, err := binaryDigest()
	if err != nil {
		return nil, err
	}
	cfg := trace.Config{Key: key, Session: s, Transcript: transcript, TranscriptURI: e.transcriptURI,
		Subject: e.subject, DataClass: e.dataClass, Measurement: measurement}
	if len(s.PolicyDigests) == 0 {
		eng, err := gate.LoadPolicy(e.st)
		if err != nil {
			return nil, fmt.Errorf("the session made no decision and the policy does not load: %w", err)
		}
		cfg.PolicyDigest = eng.Digest()
	}
	if err := os.Mkdir(e.dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(e.dir)
		}
	}()
	if e.audit {
		if cfg.Appraisal, err = e.appraise(ctx, key.Public().(ed25519.PublicKey), chain, s.ID); err != nil {
			return nil, fmt.Errorf("docket audit: %w (-no-audit exports without an appraisal)", err)
		}
	}
	abs, err := filepath.Abs(e.dir)
	if err != nil {
		return nil, err
	}
	if cfg.TranscriptURI == "" {
		cfg.TranscriptURI = (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(abs, traceTranscriptFile))}).String()
	}
	proof, err := e.st.ReadProof(s.ID, s.LastSequence)
	if err == nil {
		base, err := url.Parse(cfg.TranscriptURI)
		if err != nil {
			return nil, fmt.Errorf("-transcript-uri: %w", err)
		}
		cfg.Transparency = base.ResolveReference(&url.URL{Path: traceProofFile}).String()
		if err := os.WriteFile(filepath.Join(e.dir, traceProofFile), proof, 0o644); err != nil {
			return nil, err
		}
	} else {
		warnf(e.stderr, "receipt %d of session %s has no log proof yet: the record names none (run docket sync first)", s.LastSequence, e.session)
	}
	rec, err := trace.New(cfg)
	if err != nil {
		return nil, err
	}
	signed, err := trace.Sign(rec, key)
	if err != nil {
		return nil, err
	}
	files := []struct {
		name string
		data []byte
	}{
		{traceTranscriptFile, transcript},
		{traceChainFile, append(bytes.Join(chain, []byte("\n")), '\n')},
		{traceRecordFile, signed},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(e.dir, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// appraise runs docket audit over the session when the store names a log,
// and returns nil when it does not.
func (e *traceExport) appraise(ctx context.Context, pub ed25519.PublicKey, chain [][]byte, session string) (*trace.Appraisal, error) {
	cfg, err := e.st.LoadConfig()
	if err != nil || !cfg.HasLog() {
		return nil, err
	}
	lf := logFlags{log: cfg.LogURL, logKey: cfg.LogKey}
	if cfg.WitnessPolicy != "" {
		lf.policy = cfg.WitnessPolicyPath(e.project)
	}
	f, v, err := lf.open()
	if err != nil {
		return nil, err
	}
	raw, cp, err := readCheckpoint(ctx, f, v)
	if err != nil {
		return nil, err
	}
	evidence := filepath.Join(e.dir, "evidence")
	findings, err := audit.Run(ctx, audit.Config{Fetcher: f, Checkpoint: raw, Size: cp.Size, Root: cp.Root,
		Keys: receipts.PinnedKey(pub), Sessions: []string{session}, EvidenceDir: evidence},
		[]audit.Chain{{Source: e.st.ChainPath(session), Receipts: chain}})
	if err != nil {
		return nil, err
	}
	for _, fd := range findings {
		warnf(e.stderr, "audit: %s", fd)
	}
	os.Remove(evidence) // only if empty
	return trace.Appraise(findings, time.Now()), nil
}

// binaryDigest returns "sha256:" + hex of the running docket binary.
func binaryDigest() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

const verifyTraceUsage = `Usage:
    docket verify -trace RECORD [-key HEX | -jwks FILE | -key-file FILE]
                  [-transcript FILE | -fetch] [-chain FILE] [-proof FILE]
                  [-log-key VKEY [-witness-policy FILE]] [-max-age D]
                  [-timeout D] [-json]

Verifies a TRACE Trust Record (trace-v0.2 §3.3): the profile and schema;
that cnf.jwk is a trusted key; the Ed25519 signature over the record's
RFC 8785 bytes (a record signed over Python json.dumps(sort_keys=True)
bytes, as TRACE signers did before RFC 8785, is named as such); freshness;
the transcript's sha256 over its raw bytes and its call count; the session
chain's receipts behind every transcript entry and the policy digest they
were decided under; and, with -log-key, the tlog-proof of the chain's last
receipt (with -witness-policy, its witness quorum).

The transcript, chain and proof are read from -transcript, -chain and
-proof, else with -fetch from the record's transcript_uri, chain.jsonl
next to it, and its transparency URI (http, https or file; only once the
record's signature verified under a trusted key), else from
transcript.json, chain.jsonl and last.tlog-proof next to RECORD.

What a record names, and what is published next to it, is chosen by the
party being verified: only regular files are read (no FIFO, device or
directory), each read or fetch ends after -timeout, and each is bounded by
what the record claims: the transcript by 4 KiB a call (call_count), the
chain by two receipts a call plus 16, each at most 64 KiB, the proof by 64
KiB. Redirects: at most 5, never from https to http; gzip is bounded after
decompression, other content encodings are refused.

Options:
    -max-age D   reject records issued longer ago than D (default 24h, the
                 TRACE default; 0: no limit, for records of past sessions)
    -skew D      allowed clock skew for iat in the future (default 5m)
    -timeout D   bound each read or fetch of the record and its evidence
                 (default 30s)
    -json        print the checks as JSON

Exit status: 0 valid, 1 invalid, 2 undecidable (no trusted key, malformed,
evidence missing).
`

// isTraceFlag reports whether a docket verify argument is -trace.
func isTraceFlag(arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return strings.HasPrefix(arg, "-") && name == "trace"
}

// runVerifyTrace is docket verify -trace.
func runVerifyTrace(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("verify -trace", verifyTraceUsage, stderr)
	recordFile := fs.String("trace", "", "")
	keyHex := fs.String("key", "", "")
	jwksFile := fs.String("jwks", "", "")
	keyFile := fs.String("key-file", "", "")
	transcriptFile := fs.String("transcript", "", "")
	chainFile := fs.String("chain", "", "")
	proofFile := fs.String("proof", "", "")
	fetch := fs.Bool("fetch", false, "")
	logKey := fs.String("log-key", "", "")
	witnessPolicy := fs.String("witness-policy", "", "")
	maxAge := fs.Duration("max-age", trace.DefaultMaxAge, "")
	skew := fs.Duration("skew", trace.DefaultSkew, "")
	timeout := fs.Duration("timeout", trace.DefaultFetchTimeout, "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if *recordFile == "" || fs.NArg() > 0 || *fetch && *transcriptFile != "" {
		errorf(stderr, "verify: -trace RECORD, and at most one of -transcript and -fetch")
		return 2
	}
	keys, err := loadKeys(*keyHex, *jwksFile, *keyFile)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	fetcher := &trace.Fetcher{Timeout: *timeout}
	data, err := fetcher.ReadFile(ctx, *recordFile, strictjson.MaxDocumentSize)
	if err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	opts := trace.Options{Keys: keys, MaxAge: *maxAge, Skew: *skew}
	if *maxAge == 0 {
		opts.MaxAge = -1
	}
	if opts.Proofs, err = newProofVerifier(*logKey, *witnessPolicy); err != nil {
		errorf(stderr, "verify: %v", err)
		return 2
	}
	// Evidence is read only for a record whose signature verified under a
	// trusted key, within the limits it claims; with -fetch, the URIs are
	// that record's: nothing an untrusted record names is fetched.
	if first := trace.Verify(data, trace.Options{Keys: keys, MaxAge: opts.MaxAge, Skew: opts.Skew}); first.Record != nil {
		var transcriptURI, transparency string
		if *fetch {
			if tt := first.Record.ToolTranscript; tt != nil {
				transcriptURI = tt.TranscriptURI
			}
			transparency = first.Record.Transparency
		}
		src := evidenceSource{fetch: *fetch, dir: filepath.Dir(*recordFile), fetcher: fetcher}
		var errs []error
		lim := trace.LimitsOf(first.Record, nil)
		opts.Transcript = src.read(ctx, *transcriptFile, transcriptURI, "", traceTranscriptFile, lim.Transcript, &errs)
		lim = trace.LimitsOf(first.Record, opts.Transcript)
		if chain := src.read(ctx, *chainFile, transcriptURI, traceChainFile, traceChainFile, lim.Chain, &errs); chain != nil {
			opts.Chain = receipts.SplitLines(chain)
		}
		if opts.Proofs != nil {
			opts.Proof = src.read(ctx, *proofFile, transparency, "", traceProofFile, lim.Proof, &errs)
		}
		for _, err := range errs {
			warnf(stderr, "%v", err)
		}
	}
	rep := trace.Verify(data, opts)
	if *asJSON {
		j, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", j)
	} else {
		for _, c := range rep.Checks {
			fmt.Fprintf(stdout, "%s: %s: %s", *recordFile, c.Name, c.Outcome)
			if c.Cause != "" {
				fmt.Fprintf(stdout, ": %s", c.Cause)
			}
			fmt.Fprintf(stdout, ": %s\n", c.Detail)
		}
		if opts.Proofs == nil && rep.Record != nil {
			fmt.Fprintf(stdout, "%s: transparency: not checked (give -log-key)\n", *recordFile)
		}
		fmt.Fprintf(stdout, "%s: %s\n", *recordFile, strings.ToUpper(rep.Outcome.String()))
	}
	switch rep.Outcome {
	case receipts.Invalid:
		return 1
	case receipts.Undecidable:
		return 2
	}
	return 0
}

// evidenceSource finds the files a record's verification needs.
type evidenceSource struct {
	fetch   bool
	dir     string
	fetcher *trace.Fetcher
}

// read returns the bytes of the file given by flag, else with -fetch of the
// URI (resolving rel against it when rel is set), else of local next to the
// record; at most max bytes, of a regular file; nil when there are none
// (with -fetch, also when the record named no URI). Errors other than the
// absence of local are appended to errs.
func (s evidenceSource) read(ctx context.Context, flagFile, uri, rel, local string, max int64, errs *[]error) []byte {
	if flagFile == "" && s.fetch {
		if uri == "" {
			return nil
		}
		u, err := url.Parse(uri)
		if err == nil && rel != "" {
			u = u.ResolveReference(&url.URL{Path: rel})
		}
		var b []byte
		if err == nil {
			b, err = s.fetcher.Fetch(ctx, u.String(), max)
		}
		if err != nil {
			*errs = append(*errs, fmt.Errorf("fetching %s: %w", uri, err))
			return nil
		}
		return b
	}
	name := flagFile
	if name == "" {
		name = filepath.Join(s.dir, local)
	}
	b, err := s.fetcher.ReadFile(ctx, name, max)
	if err != nil {
		if flagFile != "" || !errors.Is(err, os.ErrNotExist) {
			*errs = append(*errs, err)
		}
		return nil
	}
	return b
}
