package aws

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/docketlog/docket/log/internal/restore"
	"github.com/docketlog/docket/log/internal/tiles"
)

// errNotFound is a missing object; it wraps fs.ErrNotExist, which the log
// answers with 404.
var errNotFound = fmt.Errorf("no such object: %w", fs.ErrNotExist)

// maxObject bounds an object read from the bucket: a full entry bundle of
// 256 entries of at most 65,535 bytes each, with their lengths.
const maxObject = 256 * (2 + 65535)

// bucket reads the log's objects.
type bucket struct {
	client *s3.Client
	name   string
	prefix string
}

// key returns the object key of p, the log's path (checkpoint, tile/…).
func (b *bucket) key(p string) string {
	if b.prefix == "" {
		return p
	}
	return path.Join(b.prefix, p)
}

// get returns the object at p, the log's path, or an error wrapping
// errNotFound.
func (b *bucket) get(ctx context.Context, p string) ([]byte, error) {
	key := b.key(p)
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: awssdk.String(b.name), Key: awssdk.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, fmt.Errorf("%s: %w", key, errNotFound)
		}
		return nil, fmt.Errorf("s3 get %s: %w", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxObject+1))
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", key, err)
	}
	if len(data) > maxObject {
		return nil, fmt.Errorf("s3 get %s: larger than %d bytes", key, maxObject)
	}
	return data, nil
}

// partial reads a tile or bundle of width w (0: full) at path(w). Tessera's
// garbage collector removes a partial resource once the full one exists,
// so a missing partial one is read from the full one and trimmed.
func (b *bucket) partial(ctx context.Context, w uint8, path func(uint8) string, trim func([]byte, uint8) ([]byte, error)) ([]byte, error) {
	data, err := b.get(ctx, path(w))
	if w == 0 || !errors.Is(err, errNotFound) {
		return data, err
	}
	if data, err = b.get(ctx, path(0)); err != nil {
		return nil, err
	}
	return trim(data, w)
}

func (b *bucket) tile(ctx context.Context, level, index uint64, w uint8) ([]byte, error) {
	return b.partial(ctx, w, func(w uint8) string { return layout.TilePath(level, index, w) }, tiles.TrimTile)
}

func (b *bucket) bundle(ctx context.Context, index uint64, w uint8) ([]byte, error) {
	return b.partial(ctx, w, func(w uint8) string { return layout.EntriesPath(index, w) }, tiles.TrimBundle)
}

// reader is the log's tessera.LogReader: the tree size from the database,
// everything else from the bucket.
//
// The published checkpoint is read from the bucket when this writer has
// just published one (Tessera's S3 client tells ownPublished), when
// Tessera's publication record in the database changed (another writer
// published), and at least every checkpointTTL. The record is read at
// most every pubPoll: a writer polling for a checkpoint that covers its
// entries (every few milliseconds while requests wait) mostly costs no
// statement at all.
//
// Hash tiles are immutable (a tile of a given width never changes), so
// the reader keeps the last maxTiles it read; and when a checkpoint
// grows the tree, it fetches at once, in parallel, the tiles that proofs
// of the new entries need, rather than leave the proof builder to fetch
// them one after another.
type reader struct {
	bucket *bucket
	db     *sql.DB
	guard  *restore.Guard

	// published counts the checkpoints this writer has uploaded.
	published atomic.Uint64

	// cpMu guards cp, cpPub, cpOwn, cpAt, cpSize and pubAt: the checkpoint
	// last read from the bucket, the publication record and the count of
	// own publications it was read under, when, and its tree size; and
	// when the publication record was last read.
	cpMu   sync.Mutex
	cp     []byte
	cpPub  [2]int64
	cpOwn  uint64
	cpAt   time.Time
	cpSize uint64
	pubAt  time.Time

	// tilesMu guards tiles.
	tilesMu sync.Mutex
	tiles   map[tileKey][]byte
	// fetching shares one read of a tile among those who ask at once.
	fetching singleflight.Group
}

// tileKey names a hash tile of a given width (0: full).
type tileKey struct {
	level, index uint64
	w            uint8
}

// maxTiles bounds the tiles reader keeps (8 KiB each at most).
const maxTiles = 4096

// maxPrefetch bounds the level-0 tiles fetched ahead for one checkpoint.
const maxPrefetch = 64

// checkpointTTL is how long reader serves the checkpoint it read while the
// publication record is unchanged.
const checkpointTTL = time.Second

// pubPoll is how often, at most, reader reads the publication record: how
// late, at most, a writer learns of a checkpoint another writer published.
const pubPoll = 50 * time.Millisecond

// ownPublished records that this writer has uploaded a new checkpoint.
func (r *reader) ownPublished() { r.published.Add(1) }

func (r *reader) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	own := r.published.Load()
	r.cpMu.Lock()
	current := r.cp != nil && own == r.cpOwn && time.Since(r.cpAt) < checkpointTTL
	if current && time.Since(r.pubAt) < pubPoll {
		defer r.cpMu.Unlock()
		return r.cp, nil
	}
	r.cpMu.Unlock()
	var pub [2]int64
	err := r.db.QueryRowContext(ctx, "SELECT `publishedAt`, COALESCE(`size`, -1) FROM `PubCoord` WHERE `id` = 0").Scan(&pub[0], &pub[1])
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("reading the publication record: %w", err)
	}
	r.cpMu.Lock()
	defer r.cpMu.Unlock()
	r.pubAt = time.Now()
	if current && pub == r.cpPub {
		return r.cp, nil
	}
	cp, err := r.bucket.get(ctx, layout.CheckpointPath)
	if err != nil {
		return nil, err
	}
	r.guard.Saw(cp)
	if !bytes.Equal(cp, r.cp) {
		r.cp = cp
		if size, err := restore.Size(cp); err == nil {
			if r.cpSize > 0 && size > r.cpSize {
				go r.prefetch(r.cpSize, size)
			}
			r.cpSize = size
		}
	}
	r.cpPub, r.cpOwn, r.cpAt = pub, own, time.Now()
	return r.cp, nil
}

func (r *reader) ReadTile(ctx context.Context, level, index uint64, w uint8) ([]byte, error) {
	k := tileKey{level, index, w}
	r.tilesMu.Lock()
	t, ok := r.tiles[k]
	r.tilesMu.Unlock()
	if ok {
		return t, nil
	}
	v, err, _ := r.fetching.Do(fmt.Sprint(k), func() (any, error) {
		// Others may wait on this read: it does not end with the caller.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		t, err := r.bucket.tile(ctx, level, index, w)
		if err != nil {
			return nil, err
		}
		r.tilesMu.Lock()
		defer r.tilesMu.Unlock()
		if r.tiles == nil || len(r.tiles) >= maxTiles {
			r.tiles = make(map[tileKey][]byte)
		}
		r.tiles[k] = t
		return t, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// prefetch reads the tiles of a tree of size that hold entries or nodes
// from old on: those that inclusion proofs in the new tree read.
func (r *reader) prefetch(old, size uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(8)
	for level := uint64(0); ; level++ {
		shift := layout.TileHeight * (level + 1)
		first, last := old>>shift, (size-1)>>shift
		first = max(first, last-min(last, maxPrefetch-1))
		for index := first; index <= last; index++ {
			g.Go(func() error {
				r.ReadTile(ctx, level, index, layout.PartialTileSize(level, index, size))
				return nil
			})
		}
		if last == 0 {
			break
		}
	}
	g.Wait()
}

func (r *reader) ReadEntryBundle(ctx context.Context, index uint64, w uint8) ([]byte, error) {
	return r.bucket.bundle(ctx, index, w)
}

// IntegratedSize returns the size of the tree integrated into the bucket.
func (r *reader) IntegratedSize(ctx context.Context) (uint64, error) {
	return queryUint(ctx, r.db, "SELECT `seq` FROM `IntCoord` WHERE `id` = 0")
}

// NextIndex returns the index the next sequenced entry gets.
func (r *reader) NextIndex(ctx context.Context) (uint64, error) {
	return queryUint(ctx, r.db, "SELECT `next` FROM `SeqCoord` WHERE `id` = 0")
}
