package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
)

// publisher tracks the published checkpoint and wakes requests waiting
// for one that covers their entry.
type publisher struct {
	l       *Log
	waiters atomic.Int64
	// wake ends an idle wait of watch when a request starts waiting.
	wake chan struct{}

	// latestMu guards latest, checked, readErr, tick and tickAt.
	latestMu sync.Mutex
	latest   *published
	// checked is when the published checkpoint was last read and verified.
	checked time.Time
	// readErr is why the latest read of the published checkpoint failed.
	readErr error
	// tick is closed and replaced at most every tickEvery while requests
	// wait, so that waiters check their deadlines without a timer each.
	tick   chan struct{}
	tickAt time.Time
}

// tickEvery is how often waiters check their deadlines.
const tickEvery = 100 * time.Millisecond

// errWaitedTooLong is await's answer when its deadline passed.
var errWaitedTooLong = errors.New("no covering checkpoint before the deadline")

// published is one published checkpoint. next is closed when a newer
// checkpoint replaces it.
type published struct {
	size uint64
	raw  []byte
	at   time.Time // when the log first saw it
	// fresh: at is when the checkpoint was published, to within a poll
	// (it replaced one the log had seen), not when the log started.
	fresh bool
	next  chan struct{}

	// nodesMu guards nodes and tiles: the tree nodes and hash tiles read or
	// computed so far for proofs in this checkpoint's tree.
	nodesMu sync.Mutex
	nodes   map[compact.NodeID][]byte
	tiles   map[[2]uint64]*api.HashTile
}

func (p *publisher) init(l *Log) {
	p.l = l
	p.wake = make(chan struct{}, 1)
	p.tick = make(chan struct{})
	p.latest = &published{next: make(chan struct{})}
	p.check(context.Background())
}

// watch polls the published checkpoint: often while requests wait, rarely
// otherwise. The first request to wait ends an idle wait at once: without
// that, a request arriving just after the others were answered waited out
// the idle interval, which set the p90 latency.
func (p *publisher) watch(ctx context.Context) {
	idle := 250 * time.Millisecond
	for {
		d := idle
		if p.waiters.Load() > 0 {
			d = p.l.cfg.PollInterval
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-time.After(d):
		}
		p.check(ctx)
		p.latestMu.Lock()
		if now := time.Now(); now.Sub(p.tickAt) >= tickEvery {
			close(p.tick)
			p.tick, p.tickAt = make(chan struct{}), now
		}
		p.latestMu.Unlock()
	}
}

// Errors of check, which name no file: the server's log has the details.
var (
	errCheckpointMissing  = errors.New("the published checkpoint is missing from storage")
	errCheckpointRead     = errors.New("the published checkpoint cannot be read from storage")
	errCheckpointBad      = errors.New("the published checkpoint does not verify")
	errCheckpointBackward = errors.New("the published checkpoint is smaller than one published before")
)

// check reads the published checkpoint and, if it changed, verifies it and
// makes it the latest. It returns why the checkpoint in storage cannot be
// served, if it cannot: none is no error before the first.
func (p *publisher) check(ctx context.Context) error {
	raw, err := p.l.reader.ReadCheckpoint(ctx)
	p.latestMu.Lock()
	defer p.latestMu.Unlock()
	switch {
	case errors.Is(err, os.ErrNotExist) && p.latest.raw == nil:
		return nil
	case errors.Is(err, os.ErrNotExist):
		return p.failed(errCheckpointMissing, err)
	case err != nil:
		return p.failed(errCheckpointRead, err)
	case bytes.Equal(raw, p.latest.raw):
		p.checked = time.Now()
		return p.failed(nil, nil)
	}
	cp, _, _, err := f_log.ParseCheckpoint(raw, p.l.origin, p.l.verifier)
	if err != nil {
		return p.failed(errCheckpointBad, err)
	}
	if cp.Size < p.latest.size {
		return p.failed(errCheckpointBackward, fmt.Errorf("size %d, was %d", cp.Size, p.latest.size))
	}
	old := p.latest
	p.checked = time.Now()
	p.latest = &published{size: cp.Size, raw: raw, at: p.checked, fresh: old.raw != nil, next: make(chan struct{})}
	close(old.next)
	p.l.logger.Debug("checkpoint published", "size", cp.Size, "grew", cp.Size-old.size, "after", p.latest.at.Sub(old.at))
	return p.failed(nil, nil)
}

// failed records that reading the published checkpoint failed with err
// (detail for the server's log) or, if err is nil, succeeded, logging each
// change, and returns err. p.latestMu must be held.
func (p *publisher) failed(err, detail error) error {
	switch {
	case err != nil && !errors.Is(p.readErr, err):
		p.l.logger.Error(err.Error(), "err", detail)
	case err == nil && p.readErr != nil:
		p.l.logger.Info("the published checkpoint is readable again")
	}
	p.readErr = err
	return err
}

// state returns the latest checkpoint and when it was last read.
func (p *publisher) state() (*published, time.Time) {
	p.latestMu.Lock()
	defer p.latestMu.Unlock()
	return p.latest, p.checked
}

// await returns the first published checkpoint that covers index i, or
// errWaitedTooLong once deadline has passed (checked at least every
// tickEvery plus a poll interval).
func (p *publisher) await(ctx context.Context, i uint64, deadline time.Time) (*published, error) {
	if p.waiters.Add(1) == 1 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	defer p.waiters.Add(-1)
	for {
		p.latestMu.Lock()
		c, tick := p.latest, p.tick
		p.latestMu.Unlock()
		if c.size > i {
			return c, nil
		}
		if !time.Now().Before(deadline) {
			return nil, errWaitedTooLong
		}
		select {
		case <-c.next:
		case <-tick:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// inclusion returns the inclusion proof of entry i in the checkpoint's
// tree. It does what Tessera's client.ProofBuilder does, but keeps every
// node it computes: proofs for entries of one checkpoint share most nodes,
// and recomputing a node inside a tile costs up to 255 hashes.
func (c *published) inclusion(ctx context.Context, l *Log, i uint64) ([][]byte, error) {
	nodes, err := proof.Inclusion(i, c.size)
	if err != nil {
		return nil, err
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	if c.nodes == nil {
		c.nodes = make(map[compact.NodeID][]byte)
		c.tiles = make(map[[2]uint64]*api.HashTile)
	}
	hashes := make([][]byte, 0, len(nodes.IDs))
	for _, id := range nodes.IDs {
		h, err := c.node(ctx, l, id)
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
	return nodes.Rehash(hashes, rfc6962.DefaultHasher.HashChildren)
}

// node returns the hash of a complete subtree of the checkpoint's tree,
// computed from the hash tile that holds it. c.nodesMu must be held.
func (c *published) node(ctx context.Context, l *Log, id compact.NodeID) ([]byte, error) {
	if h, ok := c.nodes[id]; ok {
		return h, nil
	}
	tl, ti, nl, ni := layout.NodeCoordsToTileAddress(uint64(id.Level), id.Index)
	t, ok := c.tiles[[2]uint64{tl, ti}]
	if !ok {
		raw, err := l.reader.ReadTile(ctx, tl, ti, layout.PartialTileSize(tl, ti, c.size))
		if err != nil {
			return nil, fmt.Errorf("reading tile %d/%d: %w", tl, ti, err)
		}
		t = new(api.HashTile)
		if err := t.UnmarshalText(raw); err != nil {
			return nil, fmt.Errorf("parsing tile %d/%d: %w", tl, ti, err)
		}
		c.tiles[[2]uint64{tl, ti}] = t
	}
	first := int(ni) << nl
	last := first + 1<<nl
	if last > len(t.Nodes) {
		return nil, fmt.Errorf("tile %d/%d has %d nodes, need [%d, %d)", tl, ti, len(t.Nodes), first, last)
	}
	var h []byte
	if nl == 0 {
		h = t.Nodes[first]
	} else {
		// Split in halves so that the halves are cached too.
		left, err := c.node(ctx, l, compact.NewNodeID(id.Level-1, 2*id.Index))
		if err != nil {
			return nil, err
		}
		right, err := c.node(ctx, l, compact.NewNodeID(id.Level-1, 2*id.Index+1))
		if err != nil {
			return nil, err
		}
		h = rfc6962.DefaultHasher.HashChildren(left, right)
	}
	c.nodes[id] = h
	return h, nil
}
