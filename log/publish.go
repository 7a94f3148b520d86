package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera/client"
)

// publisher tracks the published checkpoint and wakes requests waiting
// for one that covers their entry.
type publisher struct {
	l       *Log
	waiters atomic.Int64

	// latestMu guards latest.
	latestMu sync.Mutex
	latest   *published
}

// published is one published checkpoint. next is closed when a newer
// checkpoint replaces it.
type published struct {
	size uint64
	raw  []byte
	at   time.Time // when the log first saw it
	next chan struct{}

	// pbMu guards pb, which is not safe for concurrent use.
	pbMu sync.Mutex
	pb   *client.ProofBuilder
}

func (p *publisher) init(l *Log) {
	p.l = l
	p.latest = &published{next: make(chan struct{})}
	p.check(context.Background())
}

// watch polls the published checkpoint: often while requests wait, rarely
// otherwise.
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
		case <-time.After(d):
		}
		p.check(ctx)
	}
}

// check reads the published checkpoint and, if it changed, verifies it and
// makes it the latest.
func (p *publisher) check(ctx context.Context) {
	raw, err := p.l.reader.ReadCheckpoint(ctx)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		p.l.logger.Error("reading published checkpoint", "err", err)
		return
	}
	p.latestMu.Lock()
	defer p.latestMu.Unlock()
	if bytes.Equal(raw, p.latest.raw) {
		return
	}
	cp, _, _, err := f_log.ParseCheckpoint(raw, p.l.origin, p.l.verifier)
	if err != nil {
		p.l.logger.Error("published checkpoint does not verify", "err", err)
		return
	}
	if cp.Size < p.latest.size {
		p.l.logger.Error("published checkpoint went backwards", "size", cp.Size, "was", p.latest.size)
		return
	}
	old := p.latest
	p.latest = &published{size: cp.Size, raw: raw, at: time.Now(), next: make(chan struct{})}
	close(old.next)
}

func (p *publisher) current() *published {
	p.latestMu.Lock()
	defer p.latestMu.Unlock()
	return p.latest
}

// await returns the first published checkpoint that covers index i.
func (p *publisher) await(ctx context.Context, i uint64) (*published, error) {
	p.waiters.Add(1)
	defer p.waiters.Add(-1)
	for {
		c := p.current()
		if c.size > i {
			return c, nil
		}
		select {
		case <-c.next:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// inclusion returns the inclusion proof of entry i in the checkpoint.
func (c *published) inclusion(ctx context.Context, l *Log, i uint64) ([][]byte, error) {
	c.pbMu.Lock()
	defer c.pbMu.Unlock()
	if c.pb == nil {
		pb, err := client.NewProofBuilder(ctx, c.size, l.reader.ReadTile)
		if err != nil {
			return nil, err
		}
		c.pb = pb
	}
	return c.pb.InclusionProof(ctx, i)
}
