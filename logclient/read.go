package logclient

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/transparency-dev/tessera/api/layout"

	"github.com/docketlog/docket/c2sp"
)

// Caps on the tlog-tiles resources, from the widths the spec fixes.
const (
	// MaxTileSize is a full hash tile: 256 hashes of 32 bytes.
	MaxTileSize = layout.TileWidth * 32
	// MaxEntrySize is the largest entry tlog-tiles can hold.
	MaxEntrySize = 1<<16 - 1
	// MaxBundleSize is a full entry bundle of the largest entries: 256
	// entries, each a 2-byte length and up to 65,535 bytes.
	MaxBundleSize = layout.EntryBundleWidth * (2 + MaxEntrySize)
)

// ReadCheckpoint returns the log's signed checkpoint as it serves it,
// unverified (see Checkpoint), at most MaxCheckpointSize bytes. Transient
// failures are retried (Config.ReadAttempts).
func (c *Client) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	return c.read(ctx, layout.CheckpointPath, MaxCheckpointSize)
}

// Checkpoint returns the log's checkpoint verified against the log key and,
// with a policy, the witness quorum.
func (c *Client) Checkpoint(ctx context.Context) ([]byte, *c2sp.Checkpoint, error) {
	if c.cfg.Verifier == nil {
		return nil, nil, errNoVerifier
	}
	signed, err := c.ReadCheckpoint(ctx)
	if err != nil {
		return nil, nil, err
	}
	cp, err := c.cfg.Verifier.VerifyCheckpoint(signed)
	if err != nil {
		return nil, nil, err
	}
	return signed, cp, nil
}

// ReadTile returns the hash tile at level and index; p > 0 asks for the
// partial tile of p hashes, and the full tile is read when the partial one
// is gone (tlog-tiles lets a log delete it once full; the full tile starts
// with the same hashes). A tile that is not exactly 32 bytes per hash of
// its width is refused (ErrMalformed), and one larger than that is refused
// unread (ErrTooLarge: a file from its size, an HTTP answer from its
// Content-Length, else at its first byte too many). Its hashes are not checked here: a
// caller checks them against a checkpoint's root.
func (c *Client) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	return c.partialOrFull(ctx, p, func(p uint8) string { return layout.TilePath(level, index, p) },
		func(width int) int64 { return int64(32 * width) }, func(data []byte, width int) error {
			if len(data) != 32*width {
				return fmt.Errorf("%w: tile %d/%d of width %d has %d bytes", ErrMalformed, level, index, width, len(data))
			}
			return nil
		})
}

// ReadEntryBundle returns the entry bundle at index; p > 0 asks for the
// partial bundle of p entries, and the full one is read when the partial
// one is gone. A bundle of width w holds at most w·(2+MaxEntrySize) bytes
// (MaxBundleSize for a full one), and a larger one is refused as a tile is;
// one whose entries do not parse, or that holds more or fewer entries than
// its width, is refused (ErrMalformed; also ErrTooLarge for more entries).
func (c *Client) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	return c.partialOrFull(ctx, p, func(p uint8) string { return layout.EntriesPath(index, p) },
		BundleLimit, func(data []byte, width int) error {
			if err := checkBundle(data, width); err != nil {
				return fmt.Errorf("entry bundle %d: %w", index, err)
			}
			return nil
		})
}

// BundleLimit is the most bytes an entry bundle of width entries can hold.
func BundleLimit(width int) int64 { return int64(width) * (2 + MaxEntrySize) }

// partialOrFull reads the resource of width p (or the full one, for p = 0
// or when the partial one is gone), taking at most limit(width) bytes of
// it, and checks it.
func (c *Client) partialOrFull(ctx context.Context, p uint8, path func(uint8) string, limit func(width int) int64, check func([]byte, int) error) ([]byte, error) {
	width := int(p)
	if p == 0 {
		width = layout.TileWidth
	}
	data, err := c.read(ctx, path(p), limit(width))
	if p > 0 && errors.Is(err, fs.ErrNotExist) {
		width = layout.TileWidth
		data, err = c.read(ctx, path(0), limit(width))
	}
	if errors.Is(err, ErrTooLarge) {
		// More than its width holds: the wrong shape, too.
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err != nil {
		return nil, err
	}
	if err := check(data, width); err != nil {
		return nil, err
	}
	return data, nil
}

func (c *Client) read(ctx context.Context, path string, limit int64) ([]byte, error) {
	var data []byte
	err := c.retry(ctx, path, c.cfg.ReadAttempts, func() (err error) {
		data, err = c.ops.ReadRemote(ctx, path, limit)
		return err
	})
	return data, err
}

// checkBundle checks that data is a tlog-tiles entry bundle of exactly
// width entries: each a big-endian uint16 length and that many bytes, with
// nothing after the last.
func checkBundle(data []byte, width int) error {
	n := 0
	for len(data) > 0 {
		if n == width {
			return fmt.Errorf("%w: %w: more than %d entries", ErrMalformed, ErrTooLarge, width)
		}
		if len(data) < 2 {
			return fmt.Errorf("%w: entry %d: truncated length", ErrMalformed, n)
		}
		size := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+size {
			return fmt.Errorf("%w: entry %d: %d bytes announced, %d left", ErrMalformed, n, size, len(data)-2)
		}
		data = data[2+size:]
		n++
	}
	if n != width {
		return fmt.Errorf("%w: %d entries, want %d", ErrMalformed, n, width)
	}
	return nil
}
