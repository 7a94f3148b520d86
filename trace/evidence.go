package trace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/receipts"
)

// Sources says where the evidence of a record is read from: the files the
// user named, else (Fetch) the URIs of the record, else the files Export
// writes next to the record in Dir.
type Sources struct {
	// Transcript, Chain and Proof are files the user named; "" when not.
	Transcript, Chain, Proof string
	// Fetch reads what the user did not name from the record's URIs: the
	// transcript from tool_transcript.transcript_uri, the chain from
	// chain.jsonl next to it, the proof from transparency.
	Fetch bool
	// Dir is the record's directory.
	Dir string
}

// Evidence reads the evidence of rec, a record whose signature verified
// under a trusted key (nothing an untrusted record names is read), into
// opts (Transcript, Chain, and Proof when opts.Proofs is set), each
// within the limits the record claims (LimitsOf) and through f. A piece
// that cannot be read is left nil (Verify reports it missing) and its
// error returned; a file next to the record that is not there is no
// error.
func (f *Fetcher) Evidence(ctx context.Context, rec *Record, src Sources, opts *Options) []error {
	var transcriptURI, transparency string
	if src.Fetch {
		if tt := rec.ToolTranscript; tt != nil {
			transcriptURI = tt.TranscriptURI
		}
		transparency = rec.Transparency
	}
	var errs []error
	lim := LimitsOf(rec, nil)
	opts.Transcript = f.evidence(ctx, src, src.Transcript, transcriptURI, "", TranscriptFile, lim.Transcript, &errs)
	lim = LimitsOf(rec, opts.Transcript)
	if chain := f.evidence(ctx, src, src.Chain, transcriptURI, ChainFile, ChainFile, lim.Chain, &errs); chain != nil {
		opts.Chain = receipts.SplitLines(chain)
	}
	if opts.Proofs != nil {
		opts.Proof = f.evidence(ctx, src, src.Proof, transparency, "", ProofFile, lim.Proof, &errs)
	}
	return errs
}

// evidence returns the bytes of the file named (by the user), else with
// src.Fetch of the URI (resolving rel against it when rel is set), else of
// local next to the record; at most max bytes, of a regular file; nil when
// there are none (with Fetch, also when the record named no URI). Errors
// other than the absence of local are appended to errs.
func (f *Fetcher) evidence(ctx context.Context, src Sources, named, uri, rel, local string, max int64, errs *[]error) []byte {
	if named == "" && src.Fetch {
		if uri == "" {
			return nil
		}
		u, err := url.Parse(uri)
		if err == nil && rel != "" {
			u = u.ResolveReference(&url.URL{Path: rel})
		}
		var b []byte
		if err == nil {
			b, err = f.Fetch(ctx, u.String(), max)
		}
		if err != nil {
			*errs = append(*errs, fmt.Errorf("fetching %s: %w", uri, err))
			return nil
		}
		return b
	}
	name := named
	if name == "" {
		name = filepath.Join(src.Dir, local)
	}
	b, err := f.ReadFile(ctx, name, max)
	if err != nil {
		if named != "" || !errors.Is(err, os.ErrNotExist) {
			*errs = append(*errs, err)
		}
		return nil
	}
	return b
}
