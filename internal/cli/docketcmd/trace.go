package docketcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
	"github.com/docketlog/docket/trace"
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
	project, ok := findProject(stderr, "export trace")
	if !ok {
		return 2
	}
	measurement, err := trace.BinaryDigest()
	if err != nil {
		errorf(stderr, "export trace: %v", err)
		return 2
	}
	st := store.Open(project)
	cfg := trace.ExportConfig{Store: st, Session: *session, Dir: *out, TranscriptURI: *transcriptURI,
		Subject: *subject, DataClass: *dataClass, Measurement: measurement, Logger: warnLogger(stderr)}
	if c, err := st.Config(); err != nil && !*noAudit {
		errorf(stderr, "export trace: %v", err)
		return 2
	} else if c.HasLog() && !*noAudit {
		if cfg.Log, err = newFetcher(c.LogURL); err != nil {
			errorf(stderr, "export trace: %v", err)
			return 2
		}
	}
	rec, err := trace.Export(ctx, cfg)
	if err != nil {
		errorf(stderr, "export trace: %v", err)
		if errors.Is(err, trace.ErrAppraisal) {
			hintf(stderr, "-no-audit exports without an appraisal")
		}
		return 2
	}
	fmt.Fprintf(stdout, "docket: wrote the TRACE record of session %s (%s, appraisal %s) to %s\n",
		*session, plural.Count(*rec.ToolTranscript.CallCount, "call"), rec.Appraisal.Status, filepath.Join(*out, trace.RecordFile))
	return 0
}

// warnLogger is the logger of a package's warnings: each message on
// stderr as docket prints warnings.
func warnLogger(stderr io.Writer) *slog.Logger {
	return slog.New(warnHandler{stderr})
}

type warnHandler struct{ w io.Writer }

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	warnf(h.w, "%s", r.Message)
	return nil
}
func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnHandler) WithGroup(string) slog.Handler      { return h }

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
		src := trace.Sources{Transcript: *transcriptFile, Chain: *chainFile, Proof: *proofFile, Fetch: *fetch, Dir: filepath.Dir(*recordFile)}
		errs := fetcher.Evidence(ctx, first.Record, src, &opts)
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
