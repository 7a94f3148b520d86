package log

import (
	"context"
	"fmt"
	"time"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
)

// maxFollowBundles bounds the entry bundles indexed in one transaction.
const maxFollowBundles = 64

// catchUp brings the dedup index level with the integrated log before the
// log accepts writes: it indexes what a crash or a lost index file left
// out, and drops what a restored (shorter) log no longer has.
func (l *Log) catchUp(ctx context.Context) error {
	size, err := l.reader.IntegratedSize(ctx)
	if err != nil {
		return fmt.Errorf("reading tree size: %w", err)
	}
	// A driver that sequences entries before it integrates them
	// (Tessera's AWS driver) has entries that are durably sequenced, and
	// indexed from a writer's sequenced batches, but not integrated yet:
	// the index is ahead of the log only past the next index.
	next, err := l.reader.NextIndex(ctx)
	if err != nil {
		return fmt.Errorf("reading the next index: %w", err)
	}
	n, err := l.idx.Covered(ctx)
	if err != nil {
		return err
	}
	if n > max(size, next) {
		l.logger.Warn("dedup index is ahead of the log; truncating it", "covered", n, "size", size, "next", next)
		if err := l.idx.Truncate(ctx, max(size, next)); err != nil {
			return fmt.Errorf("truncating dedup index: %w", err)
		}
		n = max(size, next)
	}
	l.coveredN.Store(n)
	if n < size {
		start := time.Now()
		if err := l.follow(ctx); err != nil {
			return fmt.Errorf("rebuilding dedup index: %w", err)
		}
		l.logger.Info("dedup index rebuilt from the log", "from", n, "to", l.coveredN.Load(), "took", time.Since(start))
	}
	return nil
}

// followLoop keeps the dedup index level with the log: it indexes each
// sequenced batch as the sequencer feeds it, and reads the log itself when
// a fed batch does not start where the index ends, and every second (a
// safety net).
func (l *Log) followLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-l.fed:
			if r.from == l.coveredN.Load() {
				if err := l.index(ctx, r.from, r.hashes); err != nil && ctx.Err() == nil {
					l.logger.Error("indexing a sequenced batch", "err", err)
				}
				continue
			}
		case <-t.C:
		}
		if err := l.follow(ctx); err != nil && ctx.Err() == nil {
			l.logger.Error("following the log into the dedup index", "err", err)
		}
	}
}

// follow indexes every integrated entry the index does not cover yet, then
// forgets the pending appends the index now covers.
func (l *Log) follow(ctx context.Context) error {
	size, err := l.reader.IntegratedSize(ctx)
	if err != nil {
		return err
	}
	// An index shared with other writers may have moved on without us.
	n, err := l.idx.Covered(ctx)
	if err != nil {
		return err
	}
	if n > l.coveredN.Load() {
		l.coveredN.Store(n)
		l.prune(n)
	}
	for from := l.coveredN.Load(); from < size; from = l.coveredN.Load() {
		end := min(size, (from/layout.EntryBundleWidth+maxFollowBundles)*layout.EntryBundleWidth)
		hashes := make([]leafHash, 0, end-from)
		for b := from / layout.EntryBundleWidth; b*layout.EntryBundleWidth < end; b++ {
			raw, err := l.reader.ReadEntryBundle(ctx, b, layout.PartialTileSize(0, b, size))
			if err != nil {
				return fmt.Errorf("reading entry bundle %d: %w", b, err)
			}
			var eb api.EntryBundle
			if err := eb.UnmarshalText(raw); err != nil {
				return fmt.Errorf("parsing entry bundle %d: %w", b, err)
			}
			for j, e := range eb.Entries {
				if i := b*layout.EntryBundleWidth + uint64(j); i >= from && i < end {
					hashes = append(hashes, leafHash(rfc6962.DefaultHasher.HashLeaf(e)))
				}
			}
		}
		if uint64(len(hashes)) != end-from {
			return fmt.Errorf("entry bundles hold %d entries in [%d, %d)", len(hashes), from, end)
		}
		if err := l.index(ctx, from, hashes); err != nil {
			return err
		}
	}
	return nil
}

// index records the leaf hashes of entries from, from+1, … in the dedup
// index, which must cover exactly from entries, then forgets the pending
// appends it now covers. Only the follower calls it.
func (l *Log) index(ctx context.Context, from uint64, hashes []leafHash) error {
	end := from + uint64(len(hashes))
	dups, err := l.idx.Add(ctx, from, hashes)
	switch {
	case ctx.Err() != nil:
	case err == nil:
		l.writes.record(writeIndexing, nil)
	case !l.overtaken(ctx, from):
		l.writes.record(writeIndexing, err)
	}
	if err != nil {
		return fmt.Errorf("indexing [%d, %d): %w", from, end, err)
	}
	for _, d := range dups {
		l.logger.Error("duplicate leaf in the log", "index", d)
	}
	// The index finds the hashes once Add has returned, and only then does
	// prune forget them in memory, so a lookup always finds an entry in one
	// of the two.
	l.coveredN.Store(end)
	l.prune(end)
	return nil
}

// overtaken reports whether the index no longer covers exactly from
// entries: another writer sharing it indexed them first, and Add failed
// for that, not for a failed write.
func (l *Log) overtaken(ctx context.Context, from uint64) bool {
	n, err := l.idx.Covered(ctx)
	return err == nil && n != from
}

// prune forgets finished appends below covered: lookups find them in the index.
func (l *Log) prune(covered uint64) {
	l.recentMu.Lock()
	defer l.recentMu.Unlock()
	for h, p := range l.recent {
		select {
		case <-p.done:
			if p.err == nil && p.idx < covered {
				delete(l.recent, h)
			}
		default:
		}
	}
	l.epoch++
}
