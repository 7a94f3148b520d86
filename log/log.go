package log

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/c2sp/witnessgroup"
	"github.com/docketlog/docket/receipts"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// Errors that Add returns besides those of receipts.ParseEntry. The HTTP
// handler maps each to its status code (see statusOf).
var (
	// ErrOverloaded: too much work in flight; retry later (503).
	ErrOverloaded = errors.New("log is overloaded")
	// ErrNotPublished: the entry is sequenced but no checkpoint covering it
	// was published in time, for example because the witness quorum is
	// unreachable; retrying returns the same index (503).
	ErrNotPublished = errors.New("no published checkpoint covers the entry yet")
	// ErrIssuerNotAllowed: the entry's key is not in the issuer allowlist (403).
	ErrIssuerNotAllowed = errors.New("issuer is not allowed to write to this log")
	// ErrClosed: the log is shutting down (503).
	ErrClosed = errors.New("log is shutting down")
	// ErrNotWritable: the storage failed to write the entry's batch (a full
	// disk, a read-only file system or database, a lost connection); retry
	// later (503). Health reports it too, until a write succeeds again.
	ErrNotWritable = errors.New("the log cannot write to its storage")
)

// Config configures a Log. Zero durations and sizes take the defaults
// noted on each field.
type Config struct {
	// Driver is the Tessera storage the log appends to and reads from
	// (tiles, entry bundles, checkpoint), for example the POSIX driver that
	// posix.Open returns with its index. No other appender may use it.
	Driver tessera.Driver
	// Index is the strict dedup index over the log in Driver.
	Index Index
	// Signer signs checkpoints; its name is the log's origin.
	Signer note.Signer
	// VKey is the verifier key of Signer.
	VKey string
	// WitnessPolicy, if set, is a C2SP tlog-policy file: a checkpoint is
	// published only once the witness quorum has cosigned it.
	WitnessPolicy []byte
	// WitnessTimeout bounds one witnessing round (default 2s). The
	// driver's HTTP client reaches the witnesses (see posix.Open).
	WitnessTimeout time.Duration
	// Issuers, if set, is the allowlist of receipt signing keys.
	Issuers *receipts.KeySet
	// Tokens, if set, are the bearer tokens that may write (POST /add).
	Tokens []string

	// CheckpointInterval is the minimum time between published checkpoints
	// (default 100ms, Tessera's POSIX minimum).
	CheckpointInterval time.Duration
	// RepublishInterval is how often an unchanged checkpoint is signed and
	// witnessed again, which keeps /health fresh (default 10s).
	RepublishInterval time.Duration
	// BatchMaxSize bounds a sequencing batch (default 1024). The log hands
	// Tessera one batch at a time (group commit): entries that arrive while
	// a batch is being written form the next batch, so batches grow with
	// load and a lone entry waits for no timer.
	BatchMaxSize uint
	// BatchMaxAge is Tessera's batch timer (default 5ms). It only needs to
	// cover handing one batch over, since batches are formed by the log.
	BatchMaxAge time.Duration
	// PaceBatches, for a driver that publishes as Tessera's POSIX driver
	// does, holds each batch so that its integration ends no sooner than
	// CheckpointInterval after the latest published checkpoint, taking
	// the entries that arrive meanwhile into it. That driver publishes
	// when an integration ends at least CheckpointInterval after the last
	// publication; one that ends sooner is skipped and restarts its
	// CheckpointInterval timer, so an entry integrated early was published
	// up to a whole interval later (measured under load: a checkpoint
	// every 100–270 ms, many small batches). Held, the batch is published
	// as soon as it is integrated, in fewer, larger writes. Entries
	// integrated early could not be published any sooner.
	PaceBatches bool
	// PublishTimeout bounds how long Add waits for a covering checkpoint
	// before answering ErrNotPublished (default 10s).
	PublishTimeout time.Duration
	// MaxInFlight bounds concurrent Add calls; more are refused with
	// ErrOverloaded (default 2048).
	MaxInFlight int
	// MaxCheckpointAge is the age after which /health reports the published
	// checkpoint as stale (default 3×RepublishInterval + WitnessTimeout).
	MaxCheckpointAge time.Duration
	// PollInterval is how often the published checkpoint is read while
	// requests wait for it (default 5ms).
	PollInterval time.Duration

	// Probe, if set, reports whether the storage can take a write now (for
	// posix.Storage: free space, and a small file written durably). Health
	// runs it on every call, bounded by 2s, so it must be cheap or bound
	// its own cost; its answer must reflect a write made within the last
	// second (posix.Storage and mysql.Storage write at most once a second,
	// and answer as the last write went in between). A probe that succeeds
	// ends a failure of sequencing more than a second old.
	Probe func(context.Context) error
	// Cleanup, if set, removes what failed writes left in the storage
	// (Tessera's temporary files). The log calls it between two batches,
	// never during one: after a batch failed to be written, and when
	// Health finds the storage not writable.
	Cleanup func() error

	// Logger receives one line per notable event; nil discards.
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.Driver == nil || c.Index == nil {
		return errors.New("config: Driver and Index are required")
	}
	if c.Signer == nil || c.VKey == "" {
		return errors.New("config: Signer and VKey are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.WitnessTimeout, 2*time.Second)
	def(&c.CheckpointInterval, 100*time.Millisecond)
	def(&c.RepublishInterval, 10*time.Second)
	def(&c.BatchMaxAge, 5*time.Millisecond)
	def(&c.PublishTimeout, 10*time.Second)
	def(&c.MaxCheckpointAge, 3*c.RepublishInterval+c.WitnessTimeout)
	def(&c.PollInterval, 5*time.Millisecond)
	if c.BatchMaxSize == 0 {
		c.BatchMaxSize = 1024
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 2048
	}
	if c.RepublishInterval < c.CheckpointInterval {
		return errors.New("config: RepublishInterval is shorter than CheckpointInterval")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// A Log is a running Docket log over a Tessera driver. Its methods are
// safe for concurrent use.
type Log struct {
	cfg      Config
	logger   *slog.Logger
	origin   string
	verifier note.Verifier
	tokens   [][32]byte // SHA-256 of each writer token
	// witnessed: checkpoints need the witness quorum of the policy (not
	// "quorum none").
	witnessed bool

	appender *tessera.Appender
	reader   tessera.LogReader
	stopApp  func(context.Context) error
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	idx      Index

	inflight chan struct{}
	closing  atomic.Bool

	// recentMu guards recent and epoch. recent holds the entries this
	// process appended that the dedup index does not cover yet; epoch
	// counts prunings of recent, so a lookup can tell that an entry moved
	// from recent to the index while it was reading the index.
	recentMu sync.Mutex
	recent   map[leafHash]*pending
	epoch    uint64

	seqCh      chan *seqReq
	seqStopped chan struct{}
	// cleanup asks the sequencer to call Config.Cleanup between batches.
	cleanup chan struct{}
	// fed carries each sequenced batch's leaf hashes to the follower.
	fed       chan indexedRange
	coveredN  atomic.Uint64 // entries the dedup index covers
	sequenced atomic.Uint64 // one past the highest index this process sequenced

	pub    publisher
	writes writes

	// took holds how long the last batches took to be sequenced (the
	// sequencer's own: see pace).
	took  [8]time.Duration
	tookN int
}

// pending is one append in progress or done but not yet in the index.
// idx and err are written before done is closed.
type pending struct {
	done chan struct{}
	idx  uint64
	err  error
}

// New opens (or creates) the log in cfg.Driver, brings the dedup index
// up to date with the log, and starts sequencing, publication and the
// index follower. ctx bounds startup only; background work runs until Close.
func New(ctx context.Context, cfg Config) (*Log, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(cfg.VKey)
	if err != nil {
		return nil, fmt.Errorf("log verifier key: %w", err)
	}
	if v.Name() != cfg.Signer.Name() || v.KeyHash() != cfg.Signer.KeyHash() {
		return nil, errors.New("log verifier key does not match the signer")
	}
	l := &Log{
		cfg:        cfg,
		logger:     cfg.Logger,
		origin:     cfg.Signer.Name(),
		verifier:   v,
		inflight:   make(chan struct{}, cfg.MaxInFlight),
		recent:     make(map[leafHash]*pending),
		fed:        make(chan indexedRange, 16),
		seqCh:      make(chan *seqReq, cfg.MaxInFlight),
		seqStopped: make(chan struct{}),
		cleanup:    make(chan struct{}, 1),
		idx:        cfg.Index,
		writes:     writes{logger: cfg.Logger, failed: make(map[string]writeFailure)},
	}
	for _, t := range cfg.Tokens {
		l.tokens = append(l.tokens, sha256.Sum256([]byte(t)))
	}
	ok := false
	defer func() {
		if !ok {
			l.release()
		}
	}()

	bgCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(cfg.Signer).
		WithCheckpointInterval(cfg.CheckpointInterval).
		WithCheckpointRepublishInterval(cfg.RepublishInterval).
		WithBatching(cfg.BatchMaxSize, cfg.BatchMaxAge)
	if len(cfg.WitnessPolicy) > 0 {
		// The one strict tlog-policy parser, as every verifier uses.
		p, err := c2sp.ParsePolicy(cfg.WitnessPolicy)
		if err != nil {
			return nil, fmt.Errorf("witness policy: %w", err)
		}
		if !p.HasLog(cfg.VKey) {
			// Verifiers given the same file would refuse every proof.
			return nil, fmt.Errorf("witness policy lists %d logs but not this log's key %s", len(p.Logs), cfg.VKey)
		}
		wg, err := witnessgroup.FromPolicy(p)
		if err != nil {
			return nil, fmt.Errorf("witness policy: %w", err)
		}
		if wg != nil {
			l.witnessed = true
			opts.WithWitnesses(*wg, &tessera.WitnessOptions{Timeout: cfg.WitnessTimeout})
		}
	}
	if l.appender, l.stopApp, l.reader, err = tessera.NewAppender(bgCtx, cfg.Driver, opts); err != nil {
		return nil, fmt.Errorf("tessera appender: %w", err)
	}
	if err := l.catchUp(ctx); err != nil {
		return nil, err
	}
	l.pub.init(l)
	l.bg.Add(3)
	go func() { defer l.bg.Done(); l.sequencer(bgCtx) }()
	go func() { defer l.bg.Done(); l.followLoop(bgCtx) }()
	go func() { defer l.bg.Done(); l.pub.watch(bgCtx) }()
	ok = true
	l.logger.Info("log started", "origin", l.origin, "vkey", cfg.VKey, "size", l.coveredN.Load(),
		"witnessed", l.witnessed)
	return l, nil
}

// Origin returns the log's origin line.
func (l *Log) Origin() string { return l.origin }

// Close stops accepting entries and waits (bounded by ctx) until everything
// sequenced is published and indexed. The driver and the index are the
// caller's to close afterwards.
func (l *Log) Close(ctx context.Context) error {
	l.closing.Store(true)
	err := l.stopApp(ctx)
	if err == nil {
		err = l.follow(ctx)
	}
	l.release()
	return err
}

func (l *Log) release() {
	if l.cancel != nil {
		l.cancel()
	}
	l.bg.Wait()
}

// Authorized reports whether a write may proceed with this bearer token.
// With no tokens configured every writer is authorized.
func (l *Log) Authorized(token string) bool {
	if len(l.tokens) == 0 {
		return true
	}
	h := sha256.Sum256([]byte(token))
	ok := 0
	for _, t := range l.tokens {
		ok |= subtle.ConstantTimeCompare(h[:], t[:])
	}
	return ok == 1
}

// RequiresToken reports whether writers must present a bearer token.
func (l *Log) RequiresToken() bool { return len(l.tokens) > 0 }

// A Result is the answer to one accepted entry.
type Result struct {
	// Index is the entry's index in the log.
	Index uint64
	// Dup is true if the entry was already in the log.
	Dup bool
	// Proof is the c2sp.org/tlog-proof@v1 text: the inclusion proof of the
	// entry in Checkpoint, followed by the checkpoint verbatim.
	Proof []byte
	// Size is the size of the checkpoint in Proof.
	Size uint64
}

// Add validates one entry (DESIGN §3.4), appends it unless an identical
// entry is already in the log, waits for a published checkpoint that covers
// it and returns the proof. Errors wrap receipts.ErrMalformedEntry,
// ErrEntryTooLarge or ErrEntrySignature for bad entries, or one of this
// package's errors.
func (l *Log) Add(ctx context.Context, data []byte) (*Result, error) {
	if l.closing.Load() {
		return nil, ErrClosed
	}
	select {
	case l.inflight <- struct{}{}:
		defer func() { <-l.inflight }()
	default:
		return nil, ErrOverloaded
	}
	return l.add(ctx, data)
}

// add is Add once the entry is admitted.
func (l *Log) add(ctx context.Context, data []byte) (*Result, error) {
	leaf, err := l.admit(data)
	if err != nil {
		return nil, err
	}
	return l.addLeaf(ctx, leaf)
}

// admit validates one entry and returns its leaf.
func (l *Log) admit(data []byte) ([]byte, error) {
	e, err := receipts.ParseEntry(data)
	if err != nil {
		return nil, err
	}
	if l.cfg.Issuers != nil && !l.allowed(e) {
		return nil, fmt.Errorf("%w: %s", ErrIssuerNotAllowed, e.KID)
	}
	return e.Leaf(), nil
}

// addLeaf is add once the entry is validated.
func (l *Log) addLeaf(ctx context.Context, leaf []byte) (*Result, error) {
	idx, dup, err := l.sequence(ctx, leaf)
	if err != nil {
		return nil, err
	}
	p, err := l.pub.await(ctx, idx, time.Now().Add(l.cfg.PublishTimeout))
	if err != nil {
		if ctx.Err() == nil && l.closing.Load() {
			return nil, fmt.Errorf("%w: entry %d is sequenced", ErrClosed, idx)
		}
		if errors.Is(err, errWaitedTooLong) {
			return nil, fmt.Errorf("%w: entry %d waited %v", ErrNotPublished, idx, l.cfg.PublishTimeout)
		}
		return nil, err
	}
	hashes, err := p.inclusion(ctx, l, idx)
	if err != nil {
		return nil, fmt.Errorf("inclusion proof for %d in %d: %w", idx, p.size, err)
	}
	for _, h := range hashes {
		if len(h) != 32 {
			return nil, fmt.Errorf("inclusion proof for %d: bad hash length", idx)
		}
	}
	return &Result{Index: idx, Dup: dup, Proof: marshalProof(idx, hashes, p.raw), Size: p.size}, nil
}

// tlogProofHeader is the first line of a c2sp.org/tlog-proof@v1 proof.
const tlogProofHeader = "c2sp.org/tlog-proof@v1\n"

// marshalProof returns the c2sp.org/tlog-proof@v1 text of the inclusion
// proof hashes (32 bytes each) of entry idx in checkpoint: the bytes
// proof.TLogProof's Marshal writes, in one allocation instead of one per
// hash and line (those were a sixth of docket-log's allocations under load).
func marshalProof(idx uint64, hashes [][]byte, checkpoint []byte) []byte {
	n := len(tlogProofHeader) + len("index \n") + 20 + len(hashes)*(base64.StdEncoding.EncodedLen(32)+1) + 1 + len(checkpoint)
	b := make([]byte, 0, n)
	b = append(b, tlogProofHeader...)
	b = append(b, "index "...)
	b = strconv.AppendUint(b, idx, 10)
	b = append(b, '\n')
	for _, h := range hashes {
		b = base64.StdEncoding.AppendEncode(b, h)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, checkpoint...)
}

func (l *Log) allowed(e *receipts.Entry) bool {
	for _, k := range l.cfg.Issuers.Keys {
		if k.Public.Equal(e.PublicKey) {
			return true
		}
	}
	return false
}

// sequence returns the index of leaf, appending it if no identical leaf is
// in the log or being appended. Concurrent calls with the same leaf share
// one append.
func (l *Log) sequence(ctx context.Context, leaf []byte) (uint64, bool, error) {
	h := leafHash(rfc6962.DefaultHasher.HashLeaf(leaf))
	for {
		l.recentMu.Lock()
		if p, ok := l.recent[h]; ok {
			l.recentMu.Unlock()
			select {
			case <-p.done:
			case <-ctx.Done():
				return 0, false, ctx.Err()
			}
			if p.err != nil {
				// The append we waited on failed and was forgotten; try ours.
				if l.closing.Load() {
					return 0, false, ErrClosed
				}
				continue
			}
			return p.idx, true, nil
		}
		epoch := l.epoch
		l.recentMu.Unlock()

		// A shared index (a Claimer) looks the hash up as it claims it.
		if _, shared := l.idx.(Claimer); !shared {
			i, ok, err := l.idx.Lookup(ctx, h)
			if err != nil {
				return 0, false, err
			}
			if ok {
				return i, true, nil
			}
		}

		l.recentMu.Lock()
		if l.epoch != epoch || l.recent[h] != nil {
			l.recentMu.Unlock()
			continue
		}
		p := &pending{done: make(chan struct{})}
		l.recent[h] = p
		l.recentMu.Unlock()

		idx, dup, err := l.claimAndAppend(ctx, leaf, h)
		l.recentMu.Lock()
		p.idx, p.err = idx, err
		if err != nil {
			delete(l.recent, h)
		}
		l.recentMu.Unlock()
		close(p.done)
		if err != nil {
			return 0, false, fmt.Errorf("appending: %w", err)
		}
		return idx, dup, nil
	}
}

// claimAndAppend appends leaf, first claiming its hash if the index is
// shared with other writers (a Claimer): it returns the index another
// writer gave the entry meanwhile, with dup true.
func (l *Log) claimAndAppend(ctx context.Context, leaf []byte, h leafHash) (uint64, bool, error) {
	c, shared := l.idx.(Claimer)
	if shared {
		i, found, err := c.Claim(ctx, h)
		if err != nil || found {
			return i, found, err
		}
	}
	// The append must finish even if this client goes away: others may
	// be waiting on it, and Tessera resolves it within a batch.
	idx, err := l.append(leaf, h)
	if err != nil && shared {
		if rerr := c.Release(context.WithoutCancel(ctx), h); rerr != nil {
			l.logger.Error("releasing a claim", "err", rerr)
		}
	}
	return idx, false, err
}

// seqReq is one entry handed to the sequencer; idx and err are set before
// done is closed.
type seqReq struct {
	leaf []byte
	hash leafHash
	done chan struct{}
	idx  uint64
	err  error
}

// append sequences leaf through the sequencer and returns its index once
// Tessera has durably sequenced and integrated it. It does not give up
// when a client goes away: others may be waiting on the same append.
func (l *Log) append(leaf []byte, h leafHash) (uint64, error) {
	r := &seqReq{leaf: leaf, hash: h, done: make(chan struct{})}
	l.seqCh <- r // never blocks: seqCh holds MaxInFlight requests
	select {
	case <-r.done:
		return r.idx, r.err
	case <-l.seqStopped:
		select {
		case <-r.done:
			return r.idx, r.err
		default:
			return 0, ErrClosed
		}
	}
}

// sequencer is the group commit loop: it takes every entry waiting (up to
// BatchMaxSize), hands them to Tessera as one batch, and waits for that
// batch to be integrated before forming the next.
func (l *Log) sequencer(ctx context.Context) {
	defer close(l.seqStopped)
	max := int(l.cfg.BatchMaxSize)
	batch := make([]*seqReq, 0, max)
	futures := make([]tessera.IndexFuture, 0, max)
	for {
		batch, futures = batch[:0], futures[:0]
		select {
		case r := <-l.seqCh:
			batch = append(batch, r)
		case <-l.cleanup:
			l.cleanUp()
			continue
		case <-ctx.Done():
			return
		}
	fill:
		for len(batch) < max {
			select {
			case r := <-l.seqCh:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if l.cfg.PaceBatches {
			batch = l.pace(ctx, batch, max)
		}
		start := time.Now()
		for _, r := range batch {
			futures = append(futures, l.appender.Add(ctx, tessera.NewEntry(r.leaf)))
		}
		handover := time.Since(start)
		var failed error
		for i, r := range batch {
			res, err := futures[i]()
			switch {
			case err == nil || ctx.Err() != nil:
			case errors.Is(err, tessera.ErrPushback): // a driver with a bound on entries sequenced but not yet integrated (Tessera's AWS driver)
				err = fmt.Errorf("%w: %w", ErrOverloaded, err)
			default:
				err = fmt.Errorf("%w: %w", ErrNotWritable, err)
				failed = cmp.Or(failed, err)
			}
			r.idx, r.err = res.Index, err
			if err == nil && res.Index >= l.sequenced.Load() {
				l.sequenced.Store(res.Index + 1)
			}
		}
		if ctx.Err() == nil {
			l.writes.record(writeSequencing, failed)
		}
		if failed != nil {
			l.cleanUp()
		}
		for _, r := range batch {
			close(r.done)
		}
		l.feed(batch)
		took := time.Since(start)
		l.took[l.tookN%len(l.took)] = took
		l.tookN++
		l.logger.Debug("sequenced", "entries", len(batch), "took", took, "handover", handover)
	}
}

// pace holds batch until it can be integrated no sooner than
// CheckpointInterval after the latest published checkpoint was first seen
// (so no sooner than the driver's own clock allows a publication),
// taking the entries that arrive meanwhile, up to max (see
// Config.PaceBatches). A batch takes time to integrate: it is handed over
// that much sooner, by the shortest of the last batches' times, so that
// a slow disk (a batch taking longer than the interval) holds nothing. A
// checkpoint published meanwhile moves the time on.
func (l *Log) pace(ctx context.Context, batch []*seqReq, max int) []*seqReq {
	lead := time.Duration(0)
	if l.tookN >= len(l.took) {
		lead = slices.Min(l.took[:])
	}
	l.pub.check(ctx)
	latest, _ := l.pub.state()
	wait := time.Until(latest.at.Add(l.cfg.CheckpointInterval - lead))
	if wait <= 0 {
		return batch
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for len(batch) < max {
		select {
		case r := <-l.seqCh:
			batch = append(batch, r)
		case <-latest.next:
			latest, _ = l.pub.state()
			t.Reset(time.Until(latest.at.Add(l.cfg.CheckpointInterval - lead)))
		case <-t.C:
			return batch
		case <-ctx.Done():
			return batch
		}
	}
	return batch
}

// cleanUp calls Config.Cleanup, if set. Only the sequencer calls it,
// between batches.
func (l *Log) cleanUp() {
	if l.cfg.Cleanup == nil {
		return
	}
	if err := l.cfg.Cleanup(); err != nil {
		l.logger.Error("removing what failed writes left", "err", err)
	}
}

// indexedRange is the leaf hashes of log entries from, from+1, ….
type indexedRange struct {
	from   uint64
	hashes []leafHash
}

// feed hands the leaf hashes of a sequenced batch to the follower, so that
// it need not read back what was just written. Only a batch that Tessera
// placed at consecutive indices is fed; anything else, or a full channel,
// leaves the follower to read the log itself.
func (l *Log) feed(batch []*seqReq) {
	if len(batch) == 0 {
		return
	}
	r := indexedRange{from: batch[0].idx, hashes: make([]leafHash, 0, len(batch))}
	for i, q := range batch {
		if q.err != nil || q.idx != r.from+uint64(i) {
			return
		}
		r.hashes = append(r.hashes, q.hash)
	}
	select {
	case l.fed <- r:
	default:
	}
}
