package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/receipts"
)

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Fetcher reads the log.
	Fetcher Fetcher
	// Verifier checks each checkpoint: the log's signature and the witness
	// quorum.
	Verifier *c2sp.ProofVerifier
	// Witnesses whose latest cosigned checkpoint of the log is compared with
	// the log's, to catch a split view: their URL prefixes (the policy's
	// witness URLs). HTTPClient fetches them (nil: http.DefaultClient).
	Witnesses  []string
	HTTPClient *http.Client
	// StateDir holds the monitor's state (state.json) and its evidence files
	// (evidence/).
	StateDir string
	// Keys, if set, are the known issuers: an entry of any other issuer is
	// an unknown_issuer alert.
	Keys *receipts.KeySet
	// AlertDeny makes every logged deny decision a (notice) alert.
	AlertDeny bool
	// Stale, if positive, raises stale_log when the log has not grown for
	// that long.
	Stale time.Duration
	// Exec, if set, is run through sh -c for each alert, with
	// DOCKET_ALERT_KIND, DOCKET_ALERT_MESSAGE and DOCKET_EVIDENCE (the
	// evidence file, if any) in its environment.
	Exec string
	// Alerts receives one JSON object per alert and line; Human one line
	// per alert for people. Either may be nil.
	Alerts, Human io.Writer
	// Progress, if set, receives catch-up progress (entries/s, ETA); pass a
	// terminal only.
	Progress io.Writer
	// CommitEvery is how many entries a catch-up reads between part-way
	// commits of its state (rounded up to whole entry bundles; 0:
	// DefaultCommitEvery), so an interrupted catch-up resumes where it was.
	CommitEvery uint64
	Logger      *slog.Logger
}

// DefaultCommitEvery is MonitorConfig.CommitEvery's default: 256 bundles.
const DefaultCommitEvery = 1 << 16

// A Monitor follows one log: each Poll verifies the new checkpoint (log
// signature, witness quorum, consistency with the last one it verified),
// reads and verifies every new entry, recomputes the root, checks chains,
// issuer sequences and equivocation against what it has seen, compares the
// witnesses' views, and writes an alert, with evidence, for each finding.
// Its state is committed only after the alerts for it are written, so a
// crash re-alerts rather than forgets. A Monitor is not safe for concurrent
// use.
type Monitor struct {
	cfg MonitorConfig
	st  monitorState
	// done holds the alerts a Poll has written with a part-way commit.
	done []Finding
}

type monitorState struct {
	Checkpoint string `json:"checkpoint,omitempty"`
	Size       uint64 `json:"size"`
	// Partial, when not 0, is how many entries of Checkpoint's tree a
	// catch-up has read and checked (Range, Sessions and Issuers are of
	// that prefix); the entries [Partial, Size) are still to be read.
	Partial  uint64            `json:"partial,omitempty"`
	Range    [][]byte          `json:"range,omitempty"`
	Sessions map[string]head   `json:"sessions,omitempty"` // issuer + " " + session
	Issuers  map[string]*ihead `json:"issuers,omitempty"`
	Grew     time.Time         `json:"grew"`
	Stale    bool              `json:"stale_alerted,omitempty"`
}

// head is what the monitor keeps of a session: the sequence numbers seen,
// and the hash and index of the receipt with the highest one.
type head struct {
	seen
	Hash  string `json:"hash"`
	Index uint64 `json:"index"`
}

// seen is a set of positive numbers: all up to Max but the Missing ranges.
// Receipts reach the log out of order (docket sync submits in parallel), so
// a number below Max may still come; one that was seen already is a second
// receipt for one position.
type seen struct {
	Max     int64      `json:"max"`
	Missing [][2]int64 `json:"missing,omitempty"` // ranges [a, b] below Max not yet seen
}

// note adds n to the set and reports whether it was there already.
func (s *seen) note(n int64) (dup bool) {
	switch {
	case n > s.Max:
		if n > s.Max+1 {
			s.Missing = append(s.Missing, [2]int64{s.Max + 1, n - 1})
		}
		s.Max = n
		return false
	case s.take(n):
		return false
	}
	return true
}

type ihead = seen

// NewMonitor loads the monitor's state from cfg.StateDir, or starts empty.
func NewMonitor(cfg MonitorConfig) (*Monitor, error) {
	if cfg.Fetcher == nil || cfg.Verifier == nil || cfg.StateDir == "" {
		return nil, errors.New("monitor: Fetcher, Verifier and StateDir are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	m := &Monitor{cfg: cfg}
	b, err := os.ReadFile(m.statePath())
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("monitor state: %w", err)
	default:
		if err := json.Unmarshal(b, &m.st); err != nil {
			return nil, fmt.Errorf("monitor state %s: %w", m.statePath(), err)
		}
	}
	if m.st.Sessions == nil {
		m.st.Sessions = make(map[string]head)
		m.st.Issuers = make(map[string]*ihead)
	}
	if m.st.Partial >= m.st.Size && m.st.Partial != 0 {
		return nil, fmt.Errorf("monitor state %s: part-way size %d is not below the checkpoint's %d", m.statePath(), m.st.Partial, m.st.Size)
	}
	if m.cfg.CommitEvery == 0 {
		m.cfg.CommitEvery = DefaultCommitEvery
	}
	m.cfg.CommitEvery = (m.cfg.CommitEvery + 255) / 256 * 256
	return m, nil
}

func (m *Monitor) statePath() string { return filepath.Join(m.cfg.StateDir, "state.json") }

// Size returns the size of the last verified checkpoint.
func (m *Monitor) Size() uint64 { return m.st.Size }

// Read returns how many entries of the log the monitor has read and
// checked: Size, or less while a catch-up is part-way.
func (m *Monitor) Read() uint64 {
	if m.st.Partial != 0 {
		return m.st.Partial
	}
	return m.st.Size
}

// Poll runs one round and returns its alerts. An error means the round
// could not be completed (the log or a checkpoint could not be read or
// verified); the state is then unchanged but for the part-way commits of a
// catch-up, whose alerts are returned with the error.
func (m *Monitor) Poll(ctx context.Context) ([]Finding, error) {
	m.done = nil
	fs, err := m.poll(ctx)
	if err != nil {
		return m.done, err
	}
	return append(m.done, fs...), nil
}

func (m *Monitor) poll(ctx context.Context) ([]Finding, error) {
	raw, err := m.cfg.Fetcher.ReadCheckpoint(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	cp, err := m.cfg.Verifier.VerifyCheckpoint(raw)
	if err != nil {
		return nil, err
	}
	var alerts []Finding
	next := m.st // copied; maps are shared but only written on success paths below
	switch {
	case m.st.Checkpoint == "" || cp.Size > m.st.Size:
	case cp.Size == m.st.Size && !bytes.Equal(raw, []byte(m.st.Checkpoint)):
		var ie *c2sp.InconsistencyError
		if err := m.cfg.Verifier.CheckConsistency([]byte(m.st.Checkpoint), raw, nil); errors.As(err, &ie) {
			alerts = append(alerts, forkFinding(KindFork, fmt.Sprintf("the log signed two different roots for size %d", cp.Size),
				&Evidence{Kind: KindFork, Checkpoints: []string{m.st.Checkpoint, string(raw)}}))
			return m.commit(ctx, alerts, raw, cp.Size, nil)
		} else if err != nil {
			return nil, fmt.Errorf("monitor state %s: %w", m.statePath(), err)
		}
	case cp.Size < m.st.Size:
		alerts = append(alerts, forkFinding(KindFork, fmt.Sprintf("the log now serves size %d after signing size %d", cp.Size, m.st.Size),
			&Evidence{Kind: KindFork, Checkpoints: []string{m.st.Checkpoint, string(raw)}}))
		return m.commit(ctx, alerts, raw, cp.Size, nil)
	}
	grew := cp.Size > m.st.Size || m.st.Checkpoint == ""
	if grew || m.st.Partial != 0 {
		a, ok, err := m.grow(ctx, raw, cp, &next)
		if err != nil {
			return nil, err
		}
		alerts = append(alerts, a...)
		if !ok {
			return m.commit(ctx, alerts, raw, cp.Size, nil)
		}
		next.Partial = 0
	}
	if grew {
		next.Grew, next.Stale = time.Now(), false
	} else if m.cfg.Stale > 0 && !m.st.Grew.IsZero() && time.Since(m.st.Grew) > m.cfg.Stale && !m.st.Stale {
		alerts = append(alerts, Finding{Kind: KindStaleLog, Message: fmt.Sprintf("the log has not grown past size %d since %s", cp.Size, m.st.Grew.UTC().Format(time.RFC3339))})
		next.Stale = true
	}
	next.Checkpoint, next.Size = string(raw), cp.Size
	alerts = append(alerts, m.witnessViews(ctx, raw, cp)...)
	return m.commit(ctx, alerts, raw, cp.Size, &next)
}

// grow verifies the log's growth from the stored checkpoint to cp and reads
// the new entries. ok is false when the growth itself is a finding (a fork
// or a root mismatch): the new entries are then not taken in.
func (m *Monitor) grow(ctx context.Context, raw []byte, cp *c2sp.Checkpoint, next *monitorState) (alerts []Finding, ok bool, err error) {
	if m.st.Size > 0 && cp.Size > m.st.Size {
		pb, err := NewProofBuilder(ctx, m.cfg.Fetcher, cp.Size)
		if err != nil {
			return nil, false, err
		}
		path, err := pb.ConsistencyProof(ctx, m.st.Size, cp.Size)
		if err != nil {
			return nil, false, fmt.Errorf("consistency proof: %w", err)
		}
		var ie *c2sp.InconsistencyError
		if err := m.cfg.Verifier.CheckConsistency([]byte(m.st.Checkpoint), raw, path); errors.As(err, &ie) {
			ev, eerr := ForkEvidence(ctx, m.cfg.Fetcher, []byte(m.st.Checkpoint), m.st.Size, raw, cp.Size)
			if eerr != nil {
				return nil, false, eerr
			}
			f := forkFinding(KindFork, fmt.Sprintf("the log's checkpoint of size %d is not consistent with its checkpoint of size %d: %v", cp.Size, m.st.Size, ie.Err), ev)
			if _, verr := VerifyEvidence(ev, m.cfg.Verifier.LogKey()); verr != nil {
				// The tiles do not even reproduce the new root: the log
				// serves tiles that its checkpoint does not sign.
				f.Kind, f.Message, f.evidence = KindRootMismatch, f.Message+" (its tiles do not match its own checkpoint: "+verr.Error()+")", nil
			}
			return []Finding{f}, false, nil
		} else if err != nil {
			return nil, false, fmt.Errorf("monitor state %s: %w", m.statePath(), err)
		}
	}
	rng, err := RestoreRange(m.Read(), m.st.Range)
	if err != nil {
		return nil, false, fmt.Errorf("monitor state: %w", err)
	}
	progress := newProgress(m.cfg.Progress, m.Read(), cp.Size)
	sessions := make(map[string]head, len(m.st.Sessions))
	for k, v := range m.st.Sessions {
		sessions[k] = v
	}
	issuers := cloneIssuers(m.st.Issuers)
	var later []suspect
	var out findingList
	// Per unknown issuer, one alert counting its entries; past MaxPerKind
	// of them, only the count of each is kept, for the summary.
	unknown := make(map[string]*Finding)
	var unknownOrder []string
	moreUnknown := make(map[string]int)
	progress.findings = func() int { return out.count() + len(unknownOrder) }
	visit := func(r *Record, bad *BadEntry) error {
		progress.tick(bad != nil)
		switch {
		case bad != nil:
			out.add(Finding{Kind: KindBadEntry, Index: bad.Index, Message: fmt.Sprintf("log entry %d is not a valid Docket entry: %v", bad.Index, bad.Err),
				evidence: &Evidence{Kind: KindBadEntry, Entries: []EvidenceEntry{{Index: bad.Index}}}})
		case m.cfg.Keys != nil && !m.cfg.Keys.Has(r.Issuer):
			// Anyone may write to an open log: a stranger's entries are
			// one alert per issuer, and are not followed further.
			if f := unknown[r.Issuer]; f != nil {
				f.Count++
			} else if len(unknownOrder) == MaxPerKind {
				moreUnknown[r.Issuer]++
			} else {
				unknown[r.Issuer] = &Finding{Kind: KindUnknownIssuer, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index, Count: 1, records: []*Record{r}}
				unknownOrder = append(unknownOrder, r.Issuer)
			}
		default:
			out.add(m.check(r, sessions, issuers, &later)...)
		}
		return nil
	}
	// flush ends a stretch of the catch-up: the alerts it found so far.
	flush := func() ([]Finding, error) {
		for _, kid := range unknownOrder {
			f := unknown[kid]
			f.Message = fmt.Sprintf("%s signed by %s, which is not a known issuer; the first is entry %d", plural.Count(f.Count, "new log entry"), kid, f.Index)
			out.add(*f)
		}
		for _, n := range moreUnknown {
			out.add(Finding{Kind: KindUnknownIssuer, Count: n})
		}
		eq, err := m.findEarlier(ctx, later, cp.Size, cp.Root)
		if err != nil {
			return nil, err
		}
		out.add(eq...)
		all := out.all()
		out, later, unknownOrder = findingList{}, nil, nil
		clear(unknown)
		clear(moreUnknown)
		return all, nil
	}
	// The catch-up commits its state part-way, at each multiple of
	// CommitEvery, once the prefix read is proven a prefix of cp's tree.
	for stop := (rng.End()/m.cfg.CommitEvery + 1) * m.cfg.CommitEvery; stop < cp.Size; stop += m.cfg.CommitEvery {
		if err := scanRange(ctx, m.cfg.Fetcher, rng.End(), stop, rng, visit); err != nil {
			progress.done()
			return nil, false, err
		}
		if err := m.checkPrefix(ctx, rng, cp); err != nil {
			progress.done()
			var rm *RootMismatchError
			if errors.As(err, &rm) {
				f, ferr := rootMismatch(ctx, m.cfg.Fetcher, cp.Size, rm)
				if ferr != nil {
					return nil, false, ferr
				}
				return []Finding{f}, false, nil
			}
			return nil, false, err
		}
		a, err := flush()
		if err != nil {
			return nil, false, err
		}
		part := *next
		part.Checkpoint, part.Size, part.Partial = string(raw), cp.Size, stop
		part.Grew, part.Stale = time.Now(), false // the log grew to cp
		part.Range, part.Sessions, part.Issuers = rng.Hashes(), sessions, issuers
		if _, err := m.commit(ctx, a, raw, cp.Size, &part); err != nil {
			return nil, false, err
		}
		m.done = append(m.done, a...)
		// What was committed is m.st's now; the catch-up goes on with
		// copies.
		sessions, issuers = maps.Clone(sessions), cloneIssuers(issuers)
	}
	err = Scan(ctx, m.cfg.Fetcher, cp.Size, cp.Root, rng, visit)
	progress.done()
	var rm *RootMismatchError
	if errors.As(err, &rm) {
		f, ferr := rootMismatch(ctx, m.cfg.Fetcher, cp.Size, rm)
		if ferr != nil {
			return nil, false, ferr
		}
		return []Finding{f}, false, nil
	} else if err != nil {
		return nil, false, err
	}
	a, err := flush()
	if err != nil {
		return nil, false, err
	}
	next.Range, next.Sessions, next.Issuers = rng.Hashes(), sessions, issuers
	return a, true, nil
}

// checkPrefix checks, by a consistency proof from the log's tiles, that
// rng, the entries read so far, is a prefix of cp's tree: a part-way state
// holds only what the signed tree contains.
func (m *Monitor) checkPrefix(ctx context.Context, rng *compact.Range, cp *c2sp.Checkpoint) error {
	root, err := rng.GetRootHash(nil)
	if err != nil {
		return fmt.Errorf("computing root: %w", err)
	}
	pb, err := NewProofBuilder(ctx, m.cfg.Fetcher, cp.Size)
	if err != nil {
		return err
	}
	path, err := pb.ConsistencyProof(ctx, rng.End(), cp.Size)
	if err != nil {
		return fmt.Errorf("consistency proof: %w", err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, rng.End(), cp.Size, path, root, cp.Root); err != nil {
		return &RootMismatchError{Size: cp.Size, Want: cp.Root, Got: root, FirstIndex: 0}
	}
	return nil
}

func cloneIssuers(in map[string]*ihead) map[string]*ihead {
	out := make(map[string]*ihead, len(in))
	for k, v := range in {
		c := *v
		c.Missing = slices.Clone(v.Missing)
		out[k] = &c
	}
	return out
}

// check compares one new entry with what the monitor has seen.
func (m *Monitor) check(r *Record, sessions map[string]head, issuers map[string]*ihead, later *[]suspect) []Finding {
	var out []Finding
	if m.cfg.AlertDeny && r.Decision == receipts.Deny && r.HookEvent == "PreToolUse" {
		out = append(out, Finding{Kind: KindDenyDecision, Notice: true, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
			Message: fmt.Sprintf("session %q: deny decision %d on %s (%s)", r.Session, r.Sequence, r.ToolName, r.Reason)})
	}
	suspected := false
	if r.Sequence > 0 && r.Session != "" {
		key := r.Issuer + " " + r.Session
		h := sessions[key]
		prevMax := h.Max
		switch {
		case h.note(r.Sequence):
			suspected = true
			*later = append(*later, suspect{r, seqKey{r.Issuer, r.Session, r.Sequence}, fmt.Sprintf("session %q sequence %d", r.Session, r.Sequence)})
		case r.Sequence == prevMax+1 && prevMax > 0 && r.PreviousReceiptHash != h.Hash:
			out = append(out, m.earlier(KindChainBreak, r, h.Index, fmt.Sprintf("session %q: receipt %d does not link receipt %d (log entries %d, %d)", r.Session, r.Sequence, prevMax, h.Index, r.Index)))
		}
		if r.Sequence > prevMax {
			h.Hash, h.Index = r.Hash, r.Index
		}
		sessions[key] = h
	}
	if r.IssuerSequence > 0 {
		ih := issuers[r.Issuer]
		if ih == nil {
			ih = &ihead{}
			issuers[r.Issuer] = ih
		}
		if ih.note(r.IssuerSequence) && !suspected {
			*later = append(*later, suspect{r, seqKey{issuer: r.Issuer, seq: -r.IssuerSequence}, fmt.Sprintf("issuer_sequence %d", r.IssuerSequence)})
		}
		if r.LifecycleEvent == "issuer_checkpoint" {
			// One alert per checkpoint, however many runs are missing.
			if n := ih.runsFrom(r.IssuerHighWater); n > 0 {
				g := ih.Missing[0]
				msg := fmt.Sprintf("issuer %s: issuer_sequence %s missing from the log, though its checkpoint at entry %d counts up to %d", r.Issuer, Gap{g[0], min(g[1], r.IssuerHighWater)}, r.Index, r.IssuerHighWater)
				if n > 1 {
					msg += fmt.Sprintf(", and %s of numbers below it", plural.Count(n-1, "more run"))
				}
				out = append(out, Finding{Kind: KindIssuerSequenceGap, Issuer: r.Issuer, Sequence: g[0], Index: r.Index, Message: msg, records: []*Record{r}})
			}
		}
	}
	return out
}

// take removes n from the missing ranges, reporting whether it was missing.
// The ranges are sorted and disjoint: finding n's is a binary search.
func (h *seen) take(n int64) bool {
	i, _ := slices.BinarySearchFunc(h.Missing, n, func(g [2]int64, n int64) int { return cmp.Compare(g[1], n) })
	if i == len(h.Missing) || n < h.Missing[i][0] {
		return false
	}
	switch g := h.Missing[i]; {
	case g[0] == g[1]:
		h.Missing = slices.Delete(h.Missing, i, i+1)
	case n == g[0]:
		h.Missing[i][0]++
	case n == g[1]:
		h.Missing[i][1]--
	default:
		h.Missing[i][1] = n - 1
		h.Missing = slices.Insert(h.Missing, i+1, [2]int64{n + 1, g[1]})
	}
	return true
}

// runsFrom returns how many missing ranges start at or below n.
func (h *seen) runsFrom(n int64) int {
	i, _ := slices.BinarySearchFunc(h.Missing, n, func(g [2]int64, n int64) int {
		if g[0] <= n {
			return -1
		}
		return 1
	})
	return i
}

// earlier is a finding about r and the earlier entry at index idx, whose
// evidence prove reads back.
func (m *Monitor) earlier(kind string, r *Record, idx uint64, msg string) Finding {
	return Finding{Kind: kind, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index, Message: msg,
		records: []*Record{{Index: idx}, r}}
}

// A suspect is an entry that reuses a position (a session sequence or an
// issuer_sequence) that an earlier entry holds. key is the position: the
// issuer, session and sequence, or the issuer and the negated
// issuer_sequence.
type suspect struct {
	r    *Record
	key  seqKey
	what string
}

// findEarlier finds, for each suspect, the earlier entry it equivocates
// with, in one rescan of the log up to the last suspect, however many there
// are. For each position it keeps the first entry and the first with
// another hash: whichever of the two differs from a suspect and comes
// before it is an earlier entry that does.
func (m *Monitor) findEarlier(ctx context.Context, suspects []suspect, size uint64, root []byte) ([]Finding, error) {
	if len(suspects) == 0 {
		return nil, nil
	}
	type pair struct{ first, other *Record }
	at := make(map[seqKey]*pair, len(suspects))
	var end uint64
	for _, s := range suspects {
		at[s.key] = &pair{}
		end = max(end, s.r.Index)
	}
	stop := errors.New("stop")
	note := func(k seqKey, e *Record) {
		p := at[k]
		switch {
		case p == nil:
		case p.first == nil:
			p.first = e
		case p.other == nil && e.Hash != p.first.Hash:
			p.other = e
		}
	}
	err := Scan(ctx, m.cfg.Fetcher, size, root, NewRange(), func(e *Record, _ *BadEntry) error {
		switch {
		case e == nil:
		case e.Index >= end:
			return stop
		default:
			note(seqKey{e.Issuer, e.Session, e.Sequence}, e)
			note(seqKey{issuer: e.Issuer, seq: -e.IssuerSequence}, e)
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	var out []Finding
	for _, s := range suspects {
		r, p := s.r, at[s.key]
		var prev *Record
		for _, e := range []*Record{p.first, p.other} {
			if e != nil && e.Index < r.Index && e.Hash != r.Hash {
				prev = e
				break
			}
		}
		if prev == nil {
			continue
		}
		out = append(out, Finding{Kind: KindEquivocation, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
			Message: fmt.Sprintf("issuer %s signed two different receipts for %s: log entries %d and %d", r.Issuer, s.what, prev.Index, r.Index),
			records: []*Record{prev, r}})
	}
	return out, nil
}

// witnessViews compares each witness's latest cosigned checkpoint of the
// log with cp.
func (m *Monitor) witnessViews(ctx context.Context, raw []byte, cp *c2sp.Checkpoint) []Finding {
	var out []Finding
	for _, w := range m.cfg.Witnesses {
		u := strings.TrimSuffix(w, "/") + "/" + c2sp.LogID(cp.Origin) + "/checkpoint"
		wraw, err := m.get(ctx, u)
		if err != nil {
			m.cfg.Logger.Warn("witness view", "witness", w, "err", err)
			continue
		}
		wcp, err := c2sp.OpenCheckpoint(m.cfg.Verifier.LogKey(), wraw)
		if err != nil {
			m.cfg.Logger.Warn("witness view", "witness", w, "err", err)
			continue
		}
		var ev *Evidence
		switch {
		case wcp.Size == cp.Size && !bytes.Equal(wcp.Root, cp.Root):
			ev = &Evidence{Kind: KindWitnessSplitView, Checkpoints: []string{string(wraw), string(raw)}}
		case wcp.Size < cp.Size && wcp.Size > 0:
			ev, err = ForkEvidence(ctx, m.cfg.Fetcher, wraw, wcp.Size, raw, cp.Size)
			if err != nil {
				m.cfg.Logger.Warn("witness view", "witness", w, "err", err)
				continue
			}
			ev.Kind = KindWitnessSplitView
			if _, err := VerifyEvidence(ev, m.cfg.Verifier.LogKey()); err != nil {
				continue // consistent (or unprovable): no split view shown
			}
		default:
			continue
		}
		out = append(out, forkFinding(KindWitnessSplitView, fmt.Sprintf("witness %s holds the log's checkpoint of size %d, inconsistent with the log's checkpoint of size %d", w, wcp.Size, cp.Size), ev))
	}
	return out
}

func (m *Monitor) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, nil
}

// commit writes the alerts (evidence, JSON lines, human lines, exec) and
// then, if next is not nil, the new state.
func (m *Monitor) commit(ctx context.Context, alerts []Finding, raw []byte, size uint64, next *monitorState) ([]Finding, error) {
	dir := filepath.Join(m.cfg.StateDir, "evidence", fmt.Sprint(size))
	if err := prove(ctx, m.cfg.Fetcher, raw, size, alerts, evidenceWriter(dir)); err != nil {
		return nil, err
	}
	for _, a := range alerts {
		if m.cfg.Alerts != nil {
			b, _ := json.Marshal(a)
			if _, err := m.cfg.Alerts.Write(append(b, '\n')); err != nil {
				return nil, fmt.Errorf("writing alert: %w", err)
			}
		}
		if m.cfg.Human != nil {
			fmt.Fprintln(m.cfg.Human, "docket: alert:", a.String())
		}
		if m.cfg.Exec != "" {
			cmd := exec.CommandContext(ctx, "sh", "-c", m.cfg.Exec)
			cmd.Env = append(os.Environ(), "DOCKET_ALERT_KIND="+a.Kind, "DOCKET_ALERT_MESSAGE="+a.Message, "DOCKET_EVIDENCE="+a.EvidenceFile)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				m.cfg.Logger.Warn("alert command failed", "kind", a.Kind, "err", err)
			}
		}
	}
	if next == nil {
		return alerts, nil
	}
	b, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	if err := durable.WriteFile(m.statePath(), b, 0o644); err != nil {
		return nil, fmt.Errorf("saving monitor state: %w", err)
	}
	m.st = *next
	return alerts, nil
}

// Run polls every interval until ctx is done, returning the first error.
func (m *Monitor) Run(ctx context.Context, interval time.Duration) error {
	for {
		if _, err := m.Poll(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func forkFinding(kind, msg string, ev *Evidence) Finding {
	ev.Message = msg
	return Finding{Kind: kind, Message: msg, evidence: ev}
}

// seqKey is a position an entry may take: an issuer, session and sequence,
// or an issuer and a negated issuer_sequence.
type seqKey struct {
	issuer, session string
	seq             int64
}
