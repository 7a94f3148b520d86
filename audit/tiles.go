package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/logclient"
)

// Bounds on what a log may serve. Every reader in this package and in the
// explorer reads bundles and tiles through readBundle and tileReader, so its
// memory is bounded by these and by the log's size, never by a number or a
// length a log, a CDN in front of it, or an issuer chose.
const (
	// MaxCheckpointSize is the largest checkpoint note a reader takes.
	MaxCheckpointSize = 1 << 20
	// MaxLeafSize is the largest log entry (tlog-tiles; DESIGN §3.4).
	MaxLeafSize = 1<<16 - 1
	// MaxBundleSize is the largest legal entry bundle: 256 entries of
	// MaxLeafSize bytes, each behind its two-byte length.
	MaxBundleSize = layout.EntryBundleWidth * (2 + MaxLeafSize)
	// MaxTileSize is the size of a full hash tile: 256 hashes.
	MaxTileSize = layout.TileWidth * sha256.Size
)

// ErrOversized reports a resource larger than tlog-tiles allows: an entry
// bundle with more entries than its width or more bytes than they can hold,
// a hash tile of the wrong size, an oversized checkpoint. Only a log (or a
// path to it) that misbehaves serves one.
var ErrOversized = logclient.ErrTooLarge

// width is the number of entries or hashes a tile path of partial width p
// holds: p, or 256 for a full tile.
func width(p uint8) int {
	if p == 0 {
		return layout.EntryBundleWidth
	}
	return int(p)
}

// bundleLimit is the most bytes a bundle of w entries can hold.
func bundleLimit(w int) int64 { return int64(w) * (2 + MaxLeafSize) }

// countEntries walks the length prefixes of an entry bundle without
// materialising anything, and refuses a bundle of more than w entries (as
// soon as it sees the (w+1)th) or with dangling bytes.
func countEntries(b []byte, w int) (int, error) {
	if int64(len(b)) > bundleLimit(w) {
		return 0, fmt.Errorf("%w: %d bytes, more than %d entries can hold", ErrOversized, len(b), w)
	}
	n := 0
	for i := 0; i < len(b); n++ {
		if n == w {
			return 0, fmt.Errorf("%w: more than %d entries", ErrOversized, w)
		}
		if i+2 > len(b) {
			return 0, fmt.Errorf("dangling byte at %d of %d", i, len(b))
		}
		size := int(binary.BigEndian.Uint16(b[i:]))
		i += 2
		if i+size > len(b) {
			return 0, fmt.Errorf("entry %d needs %d bytes at %d, the bundle has %d", n, size, i, len(b))
		}
		i += size
	}
	return n, nil
}

// splitBundle returns the entries of a bundle of at most w entries; they
// share b's memory.
func splitBundle(b []byte, w int) ([][]byte, error) {
	n, err := countEntries(b, w)
	if err != nil {
		return nil, err
	}
	entries := make([][]byte, 0, n)
	for i := 0; i < len(b); {
		size := int(binary.BigEndian.Uint16(b[i:]))
		entries = append(entries, b[i+2:i+2+size:i+2+size])
		i += 2 + size
	}
	return entries, nil
}

// checkTile refuses a hash tile that is not whole hashes or holds more than
// a full tile, or fewer than the w its reader needs.
func checkTile(b []byte, w int) error {
	switch {
	case len(b) > MaxTileSize:
		return fmt.Errorf("%w: a hash tile of %d bytes, more than %d", ErrOversized, len(b), MaxTileSize)
	case len(b)%sha256.Size != 0 || len(b) < w*sha256.Size:
		return fmt.Errorf("a hash tile of %d bytes, want %d hashes of %d bytes", len(b), w, sha256.Size)
	}
	return nil
}

// readBundle reads the entries of bundle i of the tree of size size, within
// the bounds, and checks that it holds the entries the tree has there. A
// Fetcher may serve the full bundle in place of a partial one.
func readBundle(ctx context.Context, f Fetcher, i, size uint64) ([][]byte, error) {
	p := layout.PartialTileSize(0, i, size)
	b, err := f.ReadEntryBundle(ctx, i, p)
	if err != nil {
		return nil, fmt.Errorf("reading entry bundle %d: %w", i, err)
	}
	entries, err := splitBundle(b, layout.EntryBundleWidth)
	if err != nil {
		return nil, fmt.Errorf("entry bundle %d: %w", i, err)
	}
	if len(entries) < width(p) {
		return nil, fmt.Errorf("entry bundle %d has %d entries, want %d", i, len(entries), width(p))
	}
	return entries, nil
}

// ReadLeaf reads log entry idx of the tree of size size through f, within
// the bounds every reader of this package keeps.
func ReadLeaf(ctx context.Context, f Fetcher, idx, size uint64) ([]byte, error) {
	if idx >= size {
		return nil, fmt.Errorf("entry %d is beyond the tree of size %d", idx, size)
	}
	entries, err := readBundle(ctx, f, idx/layout.EntryBundleWidth, size)
	if err != nil {
		return nil, err
	}
	return entries[idx%layout.EntryBundleWidth], nil
}

// tileReader is f.ReadTile within the bounds, for Tessera's proof builder
// and leaf hash reader, which parse whatever they are given.
func tileReader(f Fetcher) client.TileFetcherFunc {
	return func(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
		b, err := f.ReadTile(ctx, level, index, p)
		if err != nil {
			return nil, err
		}
		if err := checkTile(b, width(p)); err != nil {
			return nil, fmt.Errorf("tile %d/%d: %w", level, index, err)
		}
		return b, nil
	}
}

// NewProofBuilder returns Tessera's proof builder for the tree of size size,
// reading its tiles through f within the bounds.
func NewProofBuilder(ctx context.Context, f Fetcher, size uint64) (*client.ProofBuilder, error) {
	return client.NewProofBuilder(ctx, size, tileReader(f))
}
