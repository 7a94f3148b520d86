package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// A Chain is a session chain presented to an auditor, in chain order.
type Chain struct {
	// Source names where the chain came from, for the report.
	Source   string
	Receipts [][]byte
	// Load, if Receipts is nil, reads the receipts: an audit then holds the
	// bytes of a few chains at a time, not of all, and reads a chain again
	// only to report receipts of it that are not in the log.
	Load func() ([][]byte, error)
}

func (c Chain) receipts() ([][]byte, error) {
	if c.Receipts != nil || c.Load == nil {
		return c.Receipts, nil
	}
	return c.Load()
}

// Config says what an audit reads and trusts.
type Config struct {
	// Fetcher reads the log: a URL or a local storage directory.
	Fetcher Fetcher
	// Checkpoint is the log's signed checkpoint note, already verified by
	// the caller against the log key and the witness quorum; Size and Root
	// are its tree.
	Checkpoint []byte
	Size       uint64
	Root       []byte
	// Keys are the trusted issuer keys for the presented chains.
	Keys *receipts.KeySet
	// Issuers and Sessions select what is compared. With chains presented
	// and no Issuers, the issuers of the presented receipts are selected.
	Issuers  []string
	Sessions []string
	// EvidenceDir, if set, receives one evidence file per finding that has
	// evidence.
	EvidenceDir string
	// StateDir, if set, keeps what the audit learnt of the log (its
	// verified checkpoint and a fixed-size record of every entry) for the
	// next audit, which then reads and verifies only the entries added
	// since, after proving the log consistent with the checkpoint kept.
	StateDir string
	// Progress, if set, receives progress lines (a terminal's, "\r"
	// rewritten): entries read, verified, findings, rate, time left.
	Progress io.Writer
	// RequireReconciled makes every selected session whose session_end
	// carries no transcript_hash of a record read whole a finding
	// (unreconciled); see unmediated.go.
	RequireReconciled bool
}

// Run reads the whole log, recomputes its root, and compares what it holds
// with the presented chains. It returns every finding; an error means the
// audit could not be completed (undecidable), except that a log whose
// entries do not match its signed root is a finding (root_mismatch).
//
// The log is read first, every entry verified on all cores; then the
// presented chains, on all cores, where a receipt the log holds byte for
// byte (its SHA-256 is a logged receipt's chain hash) is neither parsed nor
// verified again: its chain is checked from the ledger's records
// (presented.go). So each receipt costs one parse and one verification.
// Its memory is that of a ledger (ledger.go): about 130 bytes per log
// entry of a hook's log and 4 per presented receipt, whatever their size.
func Run(ctx context.Context, cfg Config, chains []Chain) ([]Finding, error) {
	if cfg.Size > math.MaxUint32 {
		// A ledger's positions are 32 bits.
		return nil, fmt.Errorf("a log of %d entries: an audit reads at most 2^32", cfg.Size)
	}
	var out findingList
	st, err := openState(cfg.StateDir, cfg.Size)
	if err != nil {
		return nil, err
	}
	defer st.ledger.free()
	sel := selection{issuers: set(cfg.Issuers, nil), sessions: set(cfg.Sessions, Clip)}
	// presented verifies the presented chains against what the ledger
	// holds of the log by then: a receipt logged byte for byte is not
	// parsed or verified again.
	presented := func(perm []uint32) (*presentedSet, error) {
		ps, invalid, err := verifyChains(cfg.Keys, chains, st.ledger, perm)
		if err != nil {
			return nil, err
		}
		out.add(invalid...)
		if len(chains) > 0 && len(sel.issuers) == 0 {
			sel.issuers = ps.kids
		}
		return ps, nil
	}

	if f, err := st.check(ctx, cfg); f != nil || err != nil {
		// The log is not consistent with the one audited before.
		if err != nil {
			return nil, err
		}
		if _, err := presented(st.ledger.byHash()); err != nil {
			return nil, err
		}
		out.add(*f)
		return finish(ctx, cfg, out.all())
	}
	l, rng := st.ledger, st.rng
	// One allocation for the records to come, not a doubling slice whose
	// old and new arrays are both alive while it grows.
	l.reserve(cfg.Size)
	pr := newProgress(cfg.Progress, rng.End(), cfg.Size)
	err = scanWith(ctx, cfg.Fetcher, rng.End(), cfg.Size, rng,
		func(_ uint64, leaf []byte) parsed { return parseLedgerEntry(leaf) },
		func(p parsed) error {
			l.add(p)
			pr.tick(p.bad != nil)
			return nil
		})
	if err == nil {
		err = checkRoot(rng, cfg.Size, cfg.Root, st.size)
	}
	pr.done()
	var rm *RootMismatchError
	var mismatch []Finding // reported after the presented receipts' own findings
	if errors.As(err, &rm) {
		f, ferr := rootMismatch(ctx, cfg.Fetcher, cfg.Size, rm)
		if ferr != nil {
			return nil, ferr
		}
		mismatch = append(mismatch, f)
		// What the log served at that index is not in its tree: a bad
		// entry there is the mismatch itself, not an entry the log holds.
		l.bad.deleteFunc(func(b Finding) bool { return b.Kind == KindBadEntry && b.Index == f.Index })
	} else if err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	} else if err := st.save(cfg.Checkpoint, cfg.Size); err != nil {
		return nil, err
	}
	perm := l.byHash()
	ps, err := presented(perm)
	if err != nil {
		return nil, err
	}
	out.add(mismatch...)

	var logFindings findingList
	inLog, unlogged := l.analyse(&sel, ps, perm, &logFindings)
	if len(chains) > 0 {
		if err := compare(l, &sel, chains, ps, inLog, &out); err != nil {
			return nil, err
		}
	}
	out.merge(&logFindings)
	l.unenforcedFindings(&sel, &out)
	rd := &rereader{l: l, f: cfg.Fetcher, size: cfg.Size}
	if err := l.reconciliationFindings(ctx, rd, &sel, cfg.RequireReconciled, &out); err != nil {
		return nil, err
	}
	if len(unlogged) > 0 {
		// analyse reordered it.
		slices.SortFunc(perm, l.byHashCmp)
	}
	for _, idx := range unlogged {
		r := &l.recs[idx]
		if r.flags&flagLinkHash != 0 && ps.has(l, perm, inLog, l.linkHash(uint32(idx))) {
			continue
		}
		rr := l.record(idx)
		out.add(Finding{Kind: KindUnlinkedExecution, Issuer: rr.Issuer, Session: rr.Session, Sequence: r.seq, Index: idx,
			Message: fmt.Sprintf("session %q: logged execution %d links a decision that is neither logged nor presented", rr.Session, r.seq),
			records: []*Record{rr}})
	}
	var legacy []uint32
	for id := range l.issuers {
		if l.issuers[id].legacy > 0 && l.selectedIssuer(&sel, uint32(id)) {
			legacy = append(legacy, uint32(id))
		}
	}
	slices.SortFunc(legacy, func(a, b uint32) int { return strings.Compare(l.issuers[a].kid, l.issuers[b].kid) })
	for _, id := range legacy {
		is := &l.issuers[id]
		out.add(Finding{Kind: KindUndecidedLegacy, Issuer: is.kid, Notice: true,
			Message: fmt.Sprintf("issuer %s: no issuer_sequence on %s; omissions among them cannot be decided from the log", is.kid, plural.Count(is.legacy, "logged receipt"))})
	}
	return finish(ctx, cfg, out.all())
}

// finish writes the evidence of findings.
func finish(ctx context.Context, cfg Config, findings []Finding) ([]Finding, error) {
	if cfg.EvidenceDir != "" {
		if err := prove(ctx, cfg.Fetcher, cfg.Checkpoint, cfg.Size, findings, evidenceWriter(cfg.EvidenceDir)); err != nil {
			return nil, err
		}
	}
	return findings, nil
}

// checkRoot checks that rng, the entries [0, size), has the signed root.
func checkRoot(rng *compact.Range, size uint64, root []byte, from uint64) error {
	got, err := rng.GetRootHash(nil)
	if err != nil {
		return fmt.Errorf("computing root: %w", err)
	}
	if string(got) != string(root) {
		return &RootMismatchError{Size: size, Want: root, Got: got, FirstIndex: from}
	}
	return nil
}

// compare finds presented receipts missing from the log, and selected
// logged receipts missing from what was presented: one withheld finding per
// session, with the number of its entries withheld and the first of them as
// evidence.
func compare(l *ledger, sel *selection, chains []Chain, ps *presentedSet, presented bitset, out *findingList) error {
	// Dropped: read again only the chains that hold one.
	for c := range chains {
		from, to := ps.chain(c)
		var dropped []uint32
		for i := from; i < to; i++ {
			if _, ok := ps.unlogged[i]; ok {
				dropped = append(dropped, i-from)
			}
		}
		if len(dropped) == 0 {
			continue
		}
		rs, err := chains[c].receipts()
		if err != nil {
			return fmt.Errorf("%s: %w", chains[c].Source, err)
		}
		for _, pos := range dropped {
			if int(pos) >= len(rs) {
				continue
			}
			// Members by their exact names: the strict parser, not
			// encoding/json, which matches them case-insensitively.
			doc, _ := strictjson.ParseObject(rs[pos])
			payload, _ := doc["payload"].(map[string]any)
			p := payloadFrom(payload)
			issuer, _ := payload["issuer_id"].(string)
			session, _ := payload["session_id"].(string)
			session = Clip(session)
			if len(sel.issuers) > 0 && !sel.issuers[issuer] || len(sel.sessions) > 0 && !sel.sessions[session] {
				continue
			}
			out.add(Finding{Kind: KindDropped, Issuer: issuer, Session: session, Sequence: p.Sequence, Source: chains[c].Source,
				Message: fmt.Sprintf("%s receipt %d (session %q, sequence %d, %s) is not in the log of size %d", chains[c].Source, pos+1, session, p.Sequence, hashString(ps.unlogged[from+pos]), l.size())})
		}
	}
	type session struct{ issuer, session uint32 }
	withheld := make(map[session]*Finding)
	var order []session
	more := make(map[session]int) // past MaxPerKind sessions, only counts

	for i := range l.recs {
		r := &l.recs[i]
		// Issuer checkpoints belong to no session chain: nobody presents them.
		if presented.has(uint64(i)) || r.flags&(flagIssuerCP|flagDuplicate) != 0 || !l.selected(sel, r) {
			continue
		}
		k := session{r.issuer, r.session}
		if f := withheld[k]; f != nil {
			f.Count++
			continue
		}
		if len(order) == MaxPerKind {
			more[k]++
			continue
		}
		rr := l.record(uint64(i))
		withheld[k] = &Finding{Kind: KindWithheld, Issuer: rr.Issuer, Session: rr.Session, Sequence: rr.Sequence, Index: rr.Index, Count: 1, records: []*Record{rr}}
		order = append(order, k)
	}
	for _, k := range order {
		f := withheld[k]
		r := f.records[0]
		f.Message = fmt.Sprintf("log entry %d (session %q, sequence %d, %s) was not presented", r.Index, r.Session, r.Sequence, r.Hash)
		if f.Count > 1 {
			f.Message += fmt.Sprintf(", nor the session's %s", plural.Count(f.Count-1, "later logged receipt"))
		}
		out.add(*f)
	}
	for _, n := range more {
		out.add(Finding{Kind: KindWithheld, Count: n})
	}
	return nil
}

// rootMismatch turns a root mismatch into a finding whose evidence is the
// first entry the log serves that its own tiles (and so its signed root)
// do not contain: the entry, and the inclusion proof of the leaf hash the
// tree has at that index.
func rootMismatch(ctx context.Context, fetcher Fetcher, size uint64, rm *RootMismatchError) (Finding, error) {
	f := Finding{Kind: KindRootMismatch, Message: rm.Error()}
	for first := uint64(0); first < size; first += 256 {
		n := min(256, size-first)
		want, err := client.FetchLeafHashes(ctx, tileReader(fetcher), first, n, size)
		if err != nil {
			return f, fmt.Errorf("reading leaf tiles: %w", err)
		}
		entries, err := readBundle(ctx, fetcher, first/256, size)
		if err != nil {
			return f, err
		}
		for i := range want {
			if string(leafHash(entries[i])) != string(want[i]) {
				idx := first + uint64(i)
				f.Index = idx
				f.Message = fmt.Sprintf("log entry %d as served does not hash to the leaf the signed tree holds at %d: %v", idx, idx, rm)
				// prove reads the served entry and the tree's inclusion proof.
				f.evidence = &Evidence{Kind: KindRootMismatch, Entries: []EvidenceEntry{{Index: idx}}, TreeLeafHash: b64s([][]byte{want[i]})[0]}
				return f, nil
			}
		}
	}
	return f, nil
}

// evidenceWriter returns a function that writes a finding's evidence to the
// next file of dir, named for its number and kind, and records its name.
func evidenceWriter(dir string) func(*Finding) error {
	n := 0
	return func(f *Finding) error {
		if n == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("evidence directory: %w", err)
			}
		}
		n++
		b, err := json.MarshalIndent(f.evidence, "", "  ")
		if err != nil {
			return err
		}
		name := filepath.Join(dir, fmt.Sprintf("%03d-%s.json", n, f.Kind))
		if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing evidence: %w", err)
		}
		f.EvidenceFile = name
		return nil
	}
}

// set returns the set of xs, each mapped through f if it is not nil.
func set(xs []string, f func(string) string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		if f != nil {
			x = f(x)
		}
		m[x] = true
	}
	return m
}
