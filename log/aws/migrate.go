package aws

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/log/internal/restore"
	"github.com/docketlog/docket/log/internal/tiles"
)

// A Source is a log to move: its published checkpoint and its entry
// bundles, as a tessera.LogReader reads them (tessera's client.FileFetcher
// over a POSIX storage directory, mysql.Storage.Reader, client.HTTPFetcher).
type Source interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, w uint8) ([]byte, error)
}

// ErrSourceGrew is Migrate's error when the source published a larger
// checkpoint while it was copied: its writers were not stopped.
var ErrSourceGrew = errors.New("the source log grew during the migration")

// Migrate copies the log that src holds into the storage, which must be
// empty or hold an earlier, cut-short migration of the same log (Migrate
// resumes it): the entry bundles into the bucket; the tree, which
// Tessera's migration builds from them and checks against the root of
// src's checkpoint, verified with v; the dedup index, built from the
// bundles in the bucket; and src's checkpoint, verbatim (with its witness
// cosignatures), once the rest is in place. Nothing may write to src
// meanwhile: Migrate fails with ErrSourceGrew if its checkpoint changed.
// It returns the checkpoint it moved.
func (s *Storage) Migrate(ctx context.Context, src Source, v note.Verifier, workers uint) (*f_log.Checkpoint, error) {
	raw, err := src.ReadCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the source checkpoint: %w", err)
	}
	cp, _, _, err := f_log.ParseCheckpoint(raw, v.Name(), v)
	if err != nil {
		return nil, fmt.Errorf("the source checkpoint: %w", err)
	}
	next, err := queryUint(ctx, s.DB, "SELECT `next` FROM `SeqCoord` WHERE `id` = 0")
	if err != nil {
		return nil, err
	}
	if next > cp.Size {
		return nil, fmt.Errorf("the database's log has %d entries, more than the source's %d: it holds another log", next, cp.Size)
	}
	if dst, err := s.bucket.get(ctx, layout.CheckpointPath); err == nil {
		size, err := restore.Size(dst)
		if err != nil || size > cp.Size {
			return nil, fmt.Errorf("the bucket holds a checkpoint of another log (size %d, %v)", size, err)
		}
	} else if !errors.Is(err, errNotFound) {
		return nil, err
	}

	mt, err := tessera.NewMigrationTarget(ctx, s.tessera, tessera.NewMigrationOptions())
	if err != nil {
		return nil, err
	}
	getBundle := func(ctx context.Context, i uint64, w uint8) ([]byte, error) {
		b, err := src.ReadEntryBundle(ctx, i, w)
		if err != nil {
			return nil, err
		}
		// A source may answer with a wider bundle than asked for.
		return tiles.TrimBundle(b, w)
	}
	if err := mt.Migrate(ctx, max(workers, 1), cp.Size, cp.Hash, getBundle); err != nil {
		return nil, err
	}
	// Tessera's migration builds the tree but leaves the sequencer at 0:
	// the next entry goes after the migrated ones.
	if _, err := s.DB.ExecContext(ctx, "UPDATE `SeqCoord` SET `next` = ? WHERE `id` = 0 AND `next` < ?", cp.Size, cp.Size); err != nil {
		return nil, fmt.Errorf("setting the next index: %w", err)
	}
	if err := s.indexBucket(ctx, cp.Size); err != nil {
		return nil, fmt.Errorf("building the dedup index: %w", err)
	}
	if again, err := src.ReadCheckpoint(ctx); err != nil {
		return nil, fmt.Errorf("reading the source checkpoint again: %w", err)
	} else if !bytes.Equal(again, raw) {
		return nil, fmt.Errorf("%w: stop its writers and migrate again (it resumes)", ErrSourceGrew)
	}
	_, err = s.bucket.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: awssdk.String(s.bucket.name), Key: awssdk.String(s.bucket.key(layout.CheckpointPath)),
		Body: bytes.NewReader(raw), ContentType: awssdk.String("text/plain; charset=utf-8"), CacheControl: awssdk.String("no-cache"),
	})
	if err != nil {
		return nil, fmt.Errorf("writing the checkpoint: %w", err)
	}
	return cp, nil
}

// indexBucket adds to the dedup index the entries from where it ends to
// size, read from the entry bundles in the bucket, 64 bundles at a time.
func (s *Storage) indexBucket(ctx context.Context, size uint64) error {
	from, err := s.Index.Covered(ctx)
	if err != nil {
		return err
	}
	for from < size {
		end := min(size, (from/layout.EntryBundleWidth+64)*layout.EntryBundleWidth)
		hashes := make([][32]byte, 0, end-from)
		for b := from / layout.EntryBundleWidth; b*layout.EntryBundleWidth < end; b++ {
			raw, err := s.bucket.bundle(ctx, b, layout.PartialTileSize(0, b, size))
			if err != nil {
				return err
			}
			var eb api.EntryBundle
			if err := eb.UnmarshalText(raw); err != nil {
				return fmt.Errorf("entry bundle %d: %w", b, err)
			}
			for j, e := range eb.Entries {
				if i := b*layout.EntryBundleWidth + uint64(j); i >= from && i < end {
					hashes = append(hashes, [32]byte(rfc6962.DefaultHasher.HashLeaf(e)))
				}
			}
		}
		if uint64(len(hashes)) != end-from {
			return fmt.Errorf("entry bundles hold %d entries in [%d, %d)", len(hashes), from, end)
		}
		dups, err := s.Index.Add(ctx, from, hashes)
		if err != nil {
			return err
		}
		if len(dups) > 0 {
			// Strict dedup elsewhere kept them apart; the index keeps the first.
			s.logger.Warn("the migrated log holds duplicate entries", "indices", dups)
		}
		from = end
	}
	return nil
}
