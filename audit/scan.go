package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"unicode/utf8"
	"unique"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/receipts"
)

// A Fetcher reads a log's tlog-tiles resources. HTTPFetcher (a log's URL)
// and FileFetcher (a POSIX storage directory) are Fetchers that bound what
// they read; so are Tessera's client.HTTPFetcher and client.FileFetcher,
// which read whatever they are served, so that only what they return is
// checked. ReadEntryBundle with p > 0 asks for a partial bundle of p
// entries, and may return the full bundle once the partial one is gone.
type Fetcher interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
}

// A Record is what an audit keeps of one logged receipt: where it is, its
// chain hash, and the payload members the checks need.
type Record struct {
	Index uint64
	// Hash is the receipt's chain hash, "sha256:" + hex SHA-256 of its JCS bytes.
	Hash    string
	Issuer  string
	Session string
	Payload
}

// Payload holds the members of a Docket payload that an audit reads. A
// string member longer than MaxMember bytes, which no Docket issuer writes,
// is kept clipped (see Clip), so that what a reader keeps of an entry does
// not grow with what its issuer put in it, and members with few distinct
// values are interned: an audit keeps one per logged receipt.
//
// It is read from the payload receipts.ParseEntry parsed, not through
// receipts.Open, on purpose: the log admits any draft-04 envelope its
// signature covers, so a member of the wrong type, or an integer past
// int64 (receipts.Sign's JCS writes issuer_sequence 2^63-1 as 2^63), reads
// as absent or clamped, and an entry the log rightly admitted is never
// reported as one it should have refused.
type Payload struct {
	Type                string `json:"type"`
	IssuedAt            string `json:"issued_at"`
	Sequence            int64  `json:"sequence"`
	PreviousReceiptHash string `json:"previousReceiptHash"`
	HookEvent           string `json:"hook_event"`
	ToolName            string `json:"tool_name"`
	ToolUseID           string `json:"tool_use_id"`
	ToolInputHash       string `json:"tool_input_hash"`
	Decision            string `json:"decision"`
	Reason              string `json:"reason"`
	DecisionReceiptHash string `json:"decision_receipt_hash"`
	LifecycleEvent      string `json:"lifecycle_event"`
	IssuerSequence      int64  `json:"issuer_sequence"`
	FinalSequence       int64  `json:"final_sequence"`
	HeadHash            string `json:"head_hash"`
	IssuerHighWater     int64  `json:"issuer_high_water"`
	// Unenforced is set for a decision signed with "enforced": false:
	// observe mode answered it as an allow (see unenforced.go).
	Unenforced bool `json:"-"`
}

// MaxMember is the longest payload string a Record keeps as it is.
const MaxMember = 128

// Clip returns s if it is at most MaxMember bytes, and otherwise its first
// 61 to 64 bytes (whole UTF-8 characters), "…sha256:" and the hex SHA-256
// of all of s: 135 to 138 bytes. Two values are equal exactly when their
// clips are (barring a SHA-256 collision), and a clip, longer than
// MaxMember, never equals a value that was not clipped.
func Clip(s string) string {
	if len(s) <= MaxMember {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return s[:cut] + "…sha256:" + hex.EncodeToString(sum[:])
}

// A BadEntry is a log entry that is not a valid Docket entry: the log should
// have refused it. It keeps no leaf, which may be the largest a bundle
// holds: evidence reads it back by its index.
type BadEntry struct {
	Index uint64
	Err   error
}

// ErrRootMismatch reports that the entries a log served do not hash to the
// root of the checkpoint they were read under.
var ErrRootMismatch = errors.New("entries do not hash to the checkpoint's root")

// A RootMismatchError is the evidence of ErrRootMismatch: the range read and
// the root recomputed from it.
type RootMismatchError struct {
	Size       uint64
	Want, Got  []byte
	FirstIndex uint64
}

func (e *RootMismatchError) Error() string {
	return fmt.Sprintf("%v: entries [%d, %d) give root %x, checkpoint says %x", ErrRootMismatch, e.FirstIndex, e.Size, e.Got, e.Want)
}

func (e *RootMismatchError) Unwrap() error { return ErrRootMismatch }

// NewRange returns the compact range of an empty tree, to pass to Scan.
func NewRange() *compact.Range {
	return rangeFactory.NewEmptyRange(0)
}

var rangeFactory = compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}

// RestoreRange returns the compact range [0, size) from its hashes, as
// Range.Hashes returned them.
func RestoreRange(size uint64, hashes [][]byte) (*compact.Range, error) {
	return rangeFactory.NewRange(0, size, hashes)
}

// Scan reads the entries [rng.End(), size) of the log, verifies each one
// (strict entry form, kid, Ed25519 signature) on all cores, and calls visit
// for each in index order with its record, or with a BadEntry for an entry
// that does not verify. It appends every leaf hash to rng and, once all are
// read, checks that rng's root is root: a fetch path that adds, drops,
// reorders or alters an entry cannot go unnoticed. On a mismatch it returns a
// *RootMismatchError.
func Scan(ctx context.Context, f Fetcher, size uint64, root []byte, rng *compact.Range, visit func(*Record, *BadEntry) error) error {
	from := rng.End()
	if size < from {
		return fmt.Errorf("checkpoint size %d is below the %d entries already read", size, from)
	}
	if size > from {
		if err := scanRange(ctx, f, from, size, rng, visit); err != nil {
			return err
		}
	}
	got, err := rng.GetRootHash(nil)
	if err != nil {
		return fmt.Errorf("computing root: %w", err)
	}
	if string(got) != string(root) {
		return &RootMismatchError{Size: size, Want: root, Got: got, FirstIndex: from}
	}
	return nil
}

// maxReadAhead bounds the entry bundles a scan reads ahead.
const maxReadAhead = 16

type parsedBundle struct {
	first   uint64
	hashes  [][]byte
	records []*Record
	bad     []*BadEntry
	err     error
}

func scanRange(ctx context.Context, f Fetcher, from, size uint64, rng *compact.Range, visit func(*Record, *BadEntry) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	sizeFn := func(context.Context) (uint64, error) { return size, nil }
	// Bundles read ahead: each may be MaxBundleSize, so there are at most
	// maxReadAhead of them, however many cores there are.
	bundles := client.EntryBundles(ctx, uint(min(2*workers+2, maxReadAhead)), sizeFn, f.ReadEntryBundle, from, size-from)

	// Bundles are parsed by a pool of workers and consumed in order through
	// a queue of futures.
	queue := make(chan chan parsedBundle, 2*workers)
	sem := make(chan struct{}, workers)
	go func() {
		defer close(queue)
		for b, err := range bundles {
			c := make(chan parsedBundle, 1)
			select {
			case queue <- c:
			case <-ctx.Done():
				return
			}
			if err != nil {
				c <- parsedBundle{err: fmt.Errorf("reading entry bundle: %w", err)}
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				c <- parsedBundle{err: ctx.Err()}
				return
			}
			go func() {
				defer func() { <-sem }()
				c <- parseBundle(b)
			}()
		}
	}()
	next := from
	for c := range queue {
		pb := <-c
		if pb.err != nil {
			return pb.err
		}
		if pb.first != next {
			return fmt.Errorf("entry bundle starts at %d, want %d", pb.first, next)
		}
		for i, h := range pb.hashes {
			if err := rng.Append(h, nil); err != nil {
				return err
			}
			r, bad := pb.records[i], pb.bad[i]
			if err := visit(r, bad); err != nil {
				return err
			}
		}
		next += uint64(len(pb.hashes))
	}
	if next != size {
		return fmt.Errorf("read entries up to %d, want %d", next, size)
	}
	return nil
}

func parseBundle(b client.Bundle) parsedBundle {
	ri := b.RangeInfo
	entries, err := splitBundle(b.Data, layout.EntryBundleWidth)
	if err != nil {
		return parsedBundle{err: fmt.Errorf("entry bundle %d: %w", ri.Index, err)}
	}
	if uint(len(entries)) < ri.First+ri.N {
		return parsedBundle{err: fmt.Errorf("entry bundle %d has %d entries, want at least %d", ri.Index, len(entries), ri.First+ri.N)}
	}
	first := ri.Index*256 + uint64(ri.First)
	pb := parsedBundle{
		first:   first,
		hashes:  make([][]byte, ri.N),
		records: make([]*Record, ri.N),
		bad:     make([]*BadEntry, ri.N),
	}
	for i, leaf := range entries[ri.First : ri.First+ri.N] {
		idx := first + uint64(i)
		pb.hashes[i] = rfc6962.DefaultHasher.HashLeaf(leaf)
		r, err := parseRecord(idx, leaf)
		if err != nil {
			pb.bad[i] = &BadEntry{Index: idx, Err: err}
			continue
		}
		pb.records[i] = r
	}
	return pb
}

// ParseRecord verifies the log entry leaf at index idx (strict entry form,
// kid, Ed25519 signature) and returns its record.
func ParseRecord(idx uint64, leaf []byte) (*Record, error) { return parseRecord(idx, leaf) }

// parseRecord verifies one log entry and reads the members an audit needs
// from the payload the entry's parser already built.
func parseRecord(idx uint64, leaf []byte) (*Record, error) {
	e, err := receipts.ParseEntry(leaf)
	if err != nil {
		return nil, err
	}
	return &Record{
		Index:   idx,
		Hash:    receipts.ChainHash(e.Receipt),
		Issuer:  unique.Make(e.KID).Value(),
		Session: unique.Make(Clip(e.SessionID)).Value(),
		Payload: payloadFrom(e.Payload),
	}, nil
}

// payloadFrom reads the members of a parsed payload; a member of the
// wrong type reads as absent.
func payloadFrom(m map[string]any) Payload {
	str := func(k string) string { s, _ := m[k].(string); return Clip(s) }
	// Members with few distinct values are interned, so that a view of a
	// million receipts holds one copy of each, not a million.
	few := func(k string) string { return unique.Make(str(k)).Value() }
	num := func(k string) int64 {
		n, _ := m[k].(json.Number)
		i, _ := n.Int64()
		return i
	}
	return Payload{
		Type: few("type"), IssuedAt: str("issued_at"), Sequence: num("sequence"),
		PreviousReceiptHash: str("previousReceiptHash"), HookEvent: few("hook_event"), ToolName: few("tool_name"),
		ToolUseID: str("tool_use_id"), ToolInputHash: str("tool_input_hash"), Decision: few("decision"),
		Reason: few("reason"), DecisionReceiptHash: str("decision_receipt_hash"), LifecycleEvent: few("lifecycle_event"),
		IssuerSequence: num("issuer_sequence"), FinalSequence: num("final_sequence"), HeadHash: str("head_hash"),
		IssuerHighWater: num("issuer_high_water"), Unenforced: m["enforced"] == false,
	}
}

func leafHash(leaf []byte) []byte { return rfc6962.DefaultHasher.HashLeaf(leaf) }
