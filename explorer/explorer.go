// Package explorer serves a read-only web page over a Docket log: its
// latest checkpoint (log signature and witness quorum checked), the newest
// entries, each entry with its receipt and a recomputed inclusion proof, and
// each issuer's verifiable index (package audit's IssuerIndexProof), which
// `docket verify-index` checks offline with the log key alone.
//
// The explorer reads the log through the tlog-tiles API like any client:
// every entry it shows was verified and the tree root recomputed from the
// entries before the page is served. It never writes to the log.
//
// Pages never wait on the log for what they have already verified. One
// background refresh at a time reads the log's new checkpoint and entries,
// bound to the explorer's context, not to the request that prompted it, and
// pages are served from the last view that verified (a snapshot) meanwhile.
// Only the entry page and the index download read the log themselves, at
// most Config.MaxFetches at a time. A page is served with 200 only when
// everything on it verified and the latest refresh did; otherwise with 502
// and the reason, without the storage paths or URLs behind it.
package explorer

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
)

// Config configures an Explorer.
type Config struct {
	// Fetcher reads the log; Verifier checks its checkpoints (log key and,
	// with a policy, the witness quorum).
	Fetcher  audit.Fetcher
	Verifier *c2sp.ProofVerifier
	// Refresh is how often the explorer looks for a new checkpoint, at most
	// (default one second).
	Refresh time.Duration
	// MaxFetches is how many pages may read the log at once (entry pages
	// and index downloads; default 4); the others wait their turn, as long
	// as their client does.
	MaxFetches int
	Logger     *slog.Logger
}

// Limits on what one page lists.
const (
	recentMax   = 200 // newest entries kept
	homeRows    = 50  // newest entries on the home page
	topIssuers  = 100 // issuers on the home page, the most entries first
	badMax      = 100 // entries the log should have refused, listed
	issuerRows  = 500 // an issuer's newest entries on its page
	gapsShown   = 100 // runs of missing issuer_sequence on an issuer's page
	retryWaitS  = "1" // Retry-After while the first view of the log is read
	indexPrefix = `attachment; filename="issuer-index.json"`
)

// An Explorer is the http.Handler of the explorer page. It is safe for
// concurrent use.
type Explorer struct {
	cfg     Config
	ctx     context.Context // bounds the refreshes: the explorer's lifetime
	mux     *http.ServeMux
	fetches chan struct{} // a token per page reading the log

	// current is the last view of the log that verified (nil before the
	// first); status is the outcome of the latest refresh.
	current atomic.Pointer[snapshot]
	status  atomic.Pointer[status]

	// refreshMu guards inflight and started: the refresh running, if any,
	// and when the latest one started.
	refreshMu sync.Mutex
	inflight  chan struct{}
	started   time.Time

	// The scan state, touched only by the running refresh. The index is
	// also read by pages, below the size of their snapshot.
	rng      *compact.Range
	index    *audit.IssuerIndex
	recent   []*audit.Record // the newest entries, oldest first
	bad      []*audit.BadEntry
	badCount int
}

// A snapshot is a view of the log that verified. It is never modified.
type snapshot struct {
	cp       []byte
	cpInfo   *c2sp.Checkpoint
	rows     []*audit.Record // the newest entries, newest first
	bad      []*audit.BadEntry
	badCount int
	issuers  []audit.IssuerCount
	nIssuers int
	// summaries holds, per issuer of more than cacheFrom entries, its
	// summary computed once (a func() *audit.IndexSummary): many pages of
	// one large issuer cost one computation. Snapshots of one size share it.
	summaries *sync.Map
}

const cacheFrom = 1000

// status is the outcome of a refresh: err, and what a page may say of it.
type status struct {
	err    error
	public string
}

// New returns an explorer of the log cfg describes. Its refreshes run
// under ctx: they stop when it is done.
func New(ctx context.Context, cfg Config) (*Explorer, error) {
	if cfg.Fetcher == nil || cfg.Verifier == nil {
		return nil, fmt.Errorf("explorer: Fetcher and Verifier are required")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.MaxFetches <= 0 {
		cfg.MaxFetches = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Explorer{cfg: cfg, ctx: ctx, mux: http.NewServeMux(), fetches: make(chan struct{}, cfg.MaxFetches),
		rng: audit.NewRange(), index: audit.NewIssuerIndex()}
	e.mux.HandleFunc("GET /{$}", e.home)
	e.mux.HandleFunc("GET /entry/{n}", e.entry)
	e.mux.HandleFunc("GET /issuer/{kid}", e.issuer)
	e.mux.HandleFunc("GET /issuer/{kid}/index.json", e.issuerIndex)
	e.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return e, nil
}

func (e *Explorer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	e.mux.ServeHTTP(w, r)
}

// Refresh reads the log's checkpoint and new entries now, in a refresh that
// starts after the call, and waits for it (or for ctx). It returns the
// refresh's error.
func (e *Explorer) Refresh(ctx context.Context) error {
	called := time.Now()
	for {
		done, started := e.startRefresh(true)
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !started.Before(called) {
			return e.status.Load().err
		}
	}
}

// startRefresh starts a refresh unless one runs (it then returns that one)
// or, unless force, one started less than Refresh ago (it then returns nil).
func (e *Explorer) startRefresh(force bool) (done chan struct{}, started time.Time) {
	e.refreshMu.Lock()
	defer e.refreshMu.Unlock()
	if e.inflight != nil {
		return e.inflight, e.started
	}
	if !force && !e.started.IsZero() && time.Since(e.started) < e.cfg.Refresh {
		return nil, e.started
	}
	done = make(chan struct{})
	e.inflight, e.started = done, time.Now()
	go func() {
		st := &status{}
		if st.err = e.update(e.ctx); st.err != nil {
			st.public = publicError(st.err)
			e.cfg.Logger.Warn("explorer refresh", "err", st.err)
		}
		e.status.Store(st)
		e.refreshMu.Lock()
		e.inflight = nil
		e.refreshMu.Unlock()
		close(done)
	}()
	return done, e.started
}

// view returns the snapshot to serve and the latest refresh's status,
// starting a refresh if the last one is older than Refresh. Only before the
// first view of the log verified does it wait, for as long as ctx allows.
func (e *Explorer) view(ctx context.Context) (*snapshot, *status) {
	s := e.current.Load()
	done, _ := e.startRefresh(false)
	if s == nil && done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
		s = e.current.Load()
	}
	return s, e.status.Load()
}

// A refreshError is a refresh's error with what a page may say of it.
type refreshError struct {
	public string
	err    error
}

func (r *refreshError) Error() string { return r.public + ": " + r.err.Error() }
func (r *refreshError) Unwrap() error { return r.err }

// publicError is what a page says of err: why the log could not be read or
// verified, never a storage path or URL. The log records the rest.
func publicError(err error) string {
	var re *refreshError
	var rm *audit.RootMismatchError
	switch {
	case errors.As(err, &rm):
		return "the log's entries do not hash to the root of its signed checkpoint: " + rm.Error()
	case errors.Is(err, audit.ErrOversized):
		return "the log served a tile or entry bundle larger than tlog-tiles allows"
	case errors.As(err, &re):
		return re.public
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "reading the log took too long"
	}
	return "the log could not be read"
}

func (e *Explorer) update(ctx context.Context) error {
	raw, err := e.cfg.Fetcher.ReadCheckpoint(ctx)
	if err != nil {
		return &refreshError{"the log's checkpoint could not be read", err}
	}
	cp, err := e.cfg.Verifier.VerifyCheckpoint(raw)
	if err != nil {
		return &refreshError{"the log's checkpoint does not verify: " + err.Error(), err}
	}
	last := e.current.Load()
	if last != nil && cp.Size < last.cpInfo.Size {
		return &refreshError{fmt.Sprintf("the log's checkpoint went back from size %d to %d", last.cpInfo.Size, cp.Size), errors.New("rollback")}
	}
	if last != nil && cp.Size == last.cpInfo.Size {
		if !bytes.Equal(cp.Root, last.cpInfo.Root) {
			return &refreshError{fmt.Sprintf("the log signed two roots for size %d", cp.Size), errors.New("fork")}
		}
		s := *last
		s.cp = raw // new cosignatures
		e.current.Store(&s)
		return nil
	}
	from := e.rng.End()
	rng, err := audit.RestoreRange(from, e.rng.Hashes())
	if err != nil {
		return err
	}
	recent, bad, badCount := slices.Clone(e.recent), slices.Clone(e.bad), e.badCount
	err = audit.Scan(ctx, e.cfg.Fetcher, cp.Size, cp.Root, rng, func(r *audit.Record, b *audit.BadEntry) error {
		switch {
		case b != nil:
			if badCount++; len(bad) < badMax {
				bad = append(bad, b)
			}
		default:
			recent = append(recent, r)
			if len(recent) > 2*recentMax {
				recent = append(recent[:0], recent[len(recent)-recentMax:]...)
			}
		}
		return e.index.Add(r, b)
	})
	if err != nil {
		// What the failed range added is not verified: back to what was.
		e.index.Truncate(from)
		return &refreshError{"the log's entries could not be read or do not verify", err}
	}
	e.rng, e.recent, e.bad, e.badCount = rng, recent, bad, badCount
	s := &snapshot{cp: raw, cpInfo: cp, bad: bad, badCount: badCount, summaries: new(sync.Map)}
	for i := len(recent) - 1; i >= 0 && len(s.rows) < homeRows; i-- {
		s.rows = append(s.rows, recent[i])
	}
	s.issuers, s.nIssuers = e.index.Top(topIssuers, cp.Size)
	e.current.Store(s)
	return nil
}

// code is the status of a page over s: 200 only when s exists and the
// latest refresh verified.
func code(s *snapshot, st *status) int {
	if s == nil || (st != nil && st.err != nil) {
		return http.StatusBadGateway
	}
	return http.StatusOK
}

// banner is what a page says of the latest refresh, if it failed.
func banner(st *status) string {
	if st == nil || st.err == nil {
		return ""
	}
	return st.public
}

// unavailable answers a page that has no verified view of the log to show.
func unavailable(w http.ResponseWriter, st *status) {
	if st == nil {
		w.Header().Set("Retry-After", retryWaitS)
		httpError(w, http.StatusServiceUnavailable, "the log is being read; try again in a moment")
		return
	}
	httpError(w, http.StatusBadGateway, "the log could not be read or verified: "+banner(st))
}

func (e *Explorer) home(w http.ResponseWriter, r *http.Request) {
	s, st := e.view(r.Context())
	if s == nil {
		unavailable(w, st)
		return
	}
	render(w, code(s, st), "home", map[string]any{
		"Err": banner(st), "Checkpoint": s.cpInfo, "Witnessed": e.cfg.Verifier.Witnessed(),
		"Root": hex.EncodeToString(s.cpInfo.Root), "Note": string(s.cp), "Rows": s.rows,
		"Issuers": s.issuers, "MoreIssuers": s.nIssuers - len(s.issuers), "Bad": s.bad, "MoreBad": s.badCount - len(s.bad),
	})
}

// fetchSlot waits for a turn to read the log, as long as ctx allows.
func (e *Explorer) fetchSlot(ctx context.Context) (release func(), ok bool) {
	select {
	case e.fetches <- struct{}{}:
		return func() { <-e.fetches }, true
	case <-ctx.Done():
		return nil, false
	}
}

func (e *Explorer) entry(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseUint(r.PathValue("n"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "the entry number is not a number")
		return
	}
	ctx := r.Context()
	s, st := e.view(ctx)
	if s == nil {
		unavailable(w, st)
		return
	}
	size := s.cpInfo.Size
	if n >= size {
		httpError(w, http.StatusNotFound, fmt.Sprintf("the log has %d entries", size))
		return
	}
	release, ok := e.fetchSlot(ctx)
	if !ok {
		httpError(w, http.StatusServiceUnavailable, "too many pages are reading the log; try again")
		return
	}
	defer release()
	leaf, err := audit.ReadLeaf(ctx, e.cfg.Fetcher, n, size)
	if err != nil {
		e.cfg.Logger.Warn("explorer entry", "n", n, "err", err)
		httpError(w, http.StatusBadGateway, fmt.Sprintf("reading entry %d: %s", n, publicError(err)))
		return
	}
	var hashes [][]byte
	pb, err := audit.NewProofBuilder(ctx, e.cfg.Fetcher, size)
	if err == nil {
		hashes, err = pb.InclusionProof(ctx, n)
	}
	if err != nil {
		e.cfg.Logger.Warn("explorer inclusion proof", "n", n, "err", err)
	}
	included := err == nil && proof.VerifyInclusion(rfc6962.DefaultHasher, n, size, rfc6962.DefaultHasher.HashLeaf(leaf), hashes, s.cpInfo.Root) == nil
	var pretty bytes.Buffer
	var entry struct {
		PublicKey string          `json:"public_key"`
		Receipt   json.RawMessage `json:"receipt"`
	}
	if json.Unmarshal(leaf, &entry) == nil {
		json.Indent(&pretty, entry.Receipt, "", "  ")
	}
	rec, recErr := audit.ParseRecord(n, leaf)
	proofText := make([]string, len(hashes))
	for i, h := range hashes {
		proofText[i] = hex.EncodeToString(h)
	}
	status := code(s, st)
	if !included || recErr != nil {
		status = http.StatusBadGateway
	}
	render(w, status, "entry", map[string]any{
		"Err": banner(st), "N": n, "Size": size, "Included": included, "Proof": proofText, "Receipt": pretty.String(),
		"PublicKey": entry.PublicKey, "Record": rec, "RecordErr": recErr, "LeafHash": hex.EncodeToString(rfc6962.DefaultHasher.HashLeaf(leaf)),
	})
}

func (e *Explorer) issuer(w http.ResponseWriter, r *http.Request) {
	kid := r.PathValue("kid")
	s, st := e.view(r.Context())
	if s == nil {
		unavailable(w, st)
		return
	}
	entries := e.index.EntriesBelow(kid, s.cpInfo.Size)
	if len(entries) == 0 {
		httpError(w, http.StatusNotFound, "no entry of this issuer in the log")
		return
	}
	// Every entry was verified when the log was read: the summary is what
	// an offline verifier of the downloaded index concludes.
	var sum *audit.IndexSummary
	if len(entries) > cacheFrom {
		f, _ := s.summaries.LoadOrStore(kid, sync.OnceValue(func() *audit.IndexSummary { return audit.Summarize(entries) }))
		sum = f.(func() *audit.IndexSummary)()
	} else {
		sum = audit.Summarize(entries)
	}
	gaps := sum.Gaps
	if len(gaps) > gapsShown {
		gaps = gaps[:gapsShown]
	}
	shown := entries[max(0, len(entries)-issuerRows):]
	render(w, code(s, st), "issuer", map[string]any{"Err": banner(st), "KID": kid, "Entries": shown, "Earlier": len(entries) - len(shown),
		"Summary": sum, "Gaps": gaps, "MoreGaps": len(sum.Gaps) - len(gaps), "Size": s.cpInfo.Size})
}

func (e *Explorer) issuerIndex(w http.ResponseWriter, r *http.Request) {
	kid := r.PathValue("kid")
	ctx := r.Context()
	s, st := e.view(ctx)
	if s == nil || code(s, st) != http.StatusOK {
		unavailable(w, st)
		return
	}
	release, ok := e.fetchSlot(ctx)
	if !ok {
		httpError(w, http.StatusServiceUnavailable, "too many pages are reading the log; try again")
		return
	}
	defer release()
	lw := &lazyHeader{w: w}
	started, err := audit.WriteIndexProof(ctx, lw, e.cfg.Fetcher, kid, s.cp, s.cpInfo.Size, e.index.EntriesBelow(kid, s.cpInfo.Size))
	if err == nil {
		return
	}
	e.cfg.Logger.Warn("explorer index", "issuer", kid, "err", err)
	if !started {
		httpError(w, http.StatusBadGateway, "proving the index: "+publicError(err))
		return
	}
	// Part of the index is sent: cut the response, so that no client takes
	// it for the whole.
	panic(http.ErrAbortHandler)
}

// lazyHeader sets the index download's headers at its first write.
type lazyHeader struct {
	w       http.ResponseWriter
	written bool
}

func (l *lazyHeader) Write(b []byte) (int, error) {
	if !l.written {
		l.written = true
		l.w.Header().Set("Content-Type", "application/json")
		l.w.Header().Set("Content-Disposition", indexPrefix)
	}
	return l.w.Write(b)
}

//go:embed page.html
var pageHTML string

// pages are the page templates, parsed on first use: not in every docket
// process (every hook) that links the explorer and never serves a page.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"short": func(s string) string {
			if len(s) > 19 {
				return s[:19] + "…"
			}
			return s
		},
	}).Parse(pageHTML))
})

func render(w http.ResponseWriter, code int, name string, data map[string]any) {
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, data); err != nil {
		httpError(w, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	pages().ExecuteTemplate(w, "error", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": msg})
}
