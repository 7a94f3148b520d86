package explorer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/receipts"
)

// chunk is how many entries the follower verifies and commits at a time
// (a multiple of the bundle width): pages see the verified prefix grow by
// this much. Tests make it smaller.
var chunk uint64 = 16384

// follow runs the follower until ctx is done: a cycle at once, then one
// whenever Refresh asks or cfg.Refresh has passed.
func (e *Explorer) follow(ctx context.Context) {
	defer close(e.stopped)
	// An earlier version's index gets its new indexes first; pages answer
	// meanwhile from the indexes it has.
	if err := e.idx.migrate(ctx); err != nil {
		e.cfg.Logger.Warn("explorer index", "err", err)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-e.kick:
		}
		e.mu.Lock()
		e.started++
		e.mu.Unlock()
		err := e.cycle(ctx)
		st := &status{err: err}
		if err != nil {
			st.public = publicError(err)
			e.cfg.Logger.Warn("explorer refresh", "err", err)
		}
		e.mu.Lock()
		e.status = st
		e.done++
		close(e.cycleDone)
		e.cycleDone = make(chan struct{})
		e.mu.Unlock()
		timer.Reset(e.cfg.Refresh)
	}
}

// cycle reads the log's checkpoint and verifies the entries the index does
// not have yet, committing each chunk once it is shown to be a prefix of
// the signed tree.
func (e *Explorer) cycle(ctx context.Context) error {
	raw, err := e.cfg.Fetcher.ReadCheckpoint(ctx)
	if err != nil {
		return &refreshError{"the log's checkpoint could not be read", err}
	}
	cp, err := e.cfg.Verifier.VerifyCheckpoint(raw)
	if err != nil {
		return &refreshError{"the log's checkpoint does not verify: " + err.Error(), err}
	}
	v := e.view.Load()
	if v.cp != nil {
		switch {
		case cp.Size < v.cpInfo.Size:
			return &refreshError{fmt.Sprintf("the log's checkpoint went back from size %d to %d", v.cpInfo.Size, cp.Size), errors.New("rollback")}
		case cp.Size == v.cpInfo.Size && !bytes.Equal(cp.Root, v.cpInfo.Root):
			return &refreshError{fmt.Sprintf("the log signed two roots for size %d", cp.Size), errors.New("fork")}
		}
	}
	if bytes.Equal(raw, v.cp) && v.size == cp.Size {
		return nil // nothing new, not even a cosignature
	}
	if err := e.noteWitnesses(ctx, raw, cp.Size); err != nil {
		return err
	}
	rng, err := audit.RestoreRange(v.size, v.hashes)
	if err != nil {
		return fmt.Errorf("restoring the verified range: %w", err)
	}
	var pb *client.ProofBuilder
	// consistent checks that the entries [0, rng.End()) are a prefix of
	// the tree cp signs.
	consistent := func() error {
		end := rng.End()
		if end == 0 {
			return nil
		}
		root, err := rng.GetRootHash(nil)
		if err != nil {
			return err
		}
		if end == cp.Size {
			if !bytes.Equal(root, cp.Root) {
				return &audit.RootMismatchError{Size: cp.Size, Want: cp.Root, Got: root, FirstIndex: v.size}
			}
			return nil
		}
		if pb == nil {
			if pb, err = audit.NewProofBuilder(ctx, e.cfg.Fetcher, cp.Size); err != nil {
				return &refreshError{"the log's hash tiles could not be read", err}
			}
		}
		p, err := pb.ConsistencyProof(ctx, end, cp.Size)
		if err != nil {
			return &refreshError{"the log's hash tiles could not be read", err}
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, end, cp.Size, p, root, cp.Root); err != nil {
			return &refreshError{fmt.Sprintf("the verified entries [0, %d) are not a prefix of the log's signed tree of size %d", end, cp.Size), err}
		}
		return nil
	}
	if err := consistent(); err != nil {
		return err
	}
	if cp.Size == v.size {
		if err := e.idx.setCheckpoint(ctx, raw); err != nil {
			return err
		}
		e.publish(&view{size: v.size, hashes: v.hashes, cp: raw, cpInfo: cp, target: cp.Size})
		return nil
	}
	// The prefix verified so far is consistent with the new checkpoint:
	// show it at once, with how far verification has got.
	e.publish(&view{size: v.size, hashes: v.hashes, cp: raw, cpInfo: cp, target: cp.Size})
	// Each chunk is committed while the next one is verified.
	type pending struct {
		rows []*row
		st   *state
	}
	commits := make(chan pending, 1)
	committed := make(chan error, 1)
	go func() {
		for p := range commits {
			if err := e.idx.commit(ctx, p.rows, p.st); err != nil {
				committed <- fmt.Errorf("writing the explorer index: %w", err)
				for range commits {
				}
				return
			}
			e.verified.Add(uint64(len(p.rows)))
			e.publish(&view{size: p.st.size, hashes: p.st.hashes, cp: raw, cpInfo: cp, target: cp.Size})
		}
		committed <- nil
	}()
	err = func() error {
		defer close(commits)
		for from := v.size; from < cp.Size; {
			end := min(cp.Size, (from/chunk+1)*chunk)
			rows, err := e.scan(ctx, from, end, rng)
			if err != nil {
				return &refreshError{"the log's entries could not be read or do not verify", err}
			}
			if err := consistent(); err != nil {
				return err
			}
			select {
			// Hashes returns the range's own slice, which the next
			// chunk changes: the state keeps a copy.
			case commits <- pending{rows, &state{size: end, cp: raw, hashes: cloneHashes(rng.Hashes())}}:
			case <-ctx.Done():
				return ctx.Err()
			}
			from = end
		}
		return nil
	}()
	return errors.Join(err, <-committed)
}

func cloneHashes(hs [][]byte) [][]byte {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		out[i] = bytes.Clone(h)
	}
	return out
}

// noteWitnesses records, for each witness of the policy that cosigned raw,
// that it cosigned a checkpoint of size.
func (e *Explorer) noteWitnesses(ctx context.Context, raw []byte, size uint64) error {
	p := e.cfg.Verifier.Policy()
	if p == nil {
		return nil
	}
	for _, w := range p.Witnesses {
		if n, err := note.Open(raw, note.VerifierList(w.Verifier())); err == nil && len(n.Sigs) == 1 {
			if err := e.idx.witnessed(ctx, w.Name, size); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxReadAhead bounds the entry bundles read ahead, each up to 16 MB.
const maxReadAhead = 8

// scan reads and verifies the entries [from, end) of the log, on every
// core, appending their leaf hashes to rng, and returns
// their rows in order.
func (e *Explorer) scan(ctx context.Context, from, end uint64, rng *compact.Range) ([]*row, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	// EntryBundles (Tessera v1.0.4) reads from its start to the tree size
	// it is given, whatever count it is asked for: give it end, which is
	// the tree's size or a multiple of the bundle width, so that no
	// partial bundle is asked for that the tree does not have.
	sizeFn := func(context.Context) (uint64, error) { return end, nil }
	bundles := client.EntryBundles(ctx, uint(min(2*workers, maxReadAhead)), sizeFn, e.cfg.Fetcher.ReadEntryBundle, from, end-from)
	type result struct {
		rows []*row
		err  error
	}
	// Each bundle is parsed on its own goroutine, at most workers at a
	// time; results are taken in order.
	pending := make(chan chan result, workers)
	sem := make(chan struct{}, workers)
	go func() {
		defer close(pending)
		for b, err := range bundles {
			c := make(chan result, 1)
			select {
			case pending <- c:
			case <-ctx.Done():
				return
			}
			if err != nil {
				c <- result{err: fmt.Errorf("reading entry bundle: %w", err)}
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				c <- result{err: ctx.Err()}
				return
			}
			go func() {
				defer func() { <-sem }()
				rows, err := parseBundle(b)
				c <- result{rows, err}
			}()
		}
	}()
	rows := make([]*row, 0, end-from)
	for c := range pending {
		res := <-c
		if res.err != nil {
			return nil, res.err
		}
		for _, r := range res.rows {
			if r.Index != from+uint64(len(rows)) {
				return nil, fmt.Errorf("entry bundle gave entry %d, want %d", r.Index, from+uint64(len(rows)))
			}
			if err := rng.Append(r.Leaf, nil); err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	if uint64(len(rows)) != end-from {
		return nil, fmt.Errorf("read %d entries of [%d, %d)", len(rows), from, end)
	}
	return rows, ctx.Err()
}

// parseBundle verifies the entries of b that its range asks for.
func parseBundle(b client.Bundle) ([]*row, error) {
	ri := b.RangeInfo
	leaves, err := splitBundle(b.Data)
	if err != nil {
		return nil, fmt.Errorf("entry bundle %d: %w", ri.Index, err)
	}
	if uint(len(leaves)) < ri.First+ri.N {
		return nil, fmt.Errorf("entry bundle %d has %d entries, want at least %d", ri.Index, len(leaves), ri.First+ri.N)
	}
	first := ri.Index*layout.EntryBundleWidth + uint64(ri.First)
	rows := make([]*row, ri.N)
	for i, leaf := range leaves[ri.First : ri.First+ri.N] {
		rows[i] = parseRow(first+uint64(i), leaf)
		// Let a page's goroutine have this core now rather than at the
		// next preemption (10 ms): a page runs a few queries, each of
		// which may wait for a P again after a read.
		runtime.Gosched()
	}
	return rows, nil
}

// splitBundle splits a tlog-tiles entry bundle: entries of a two-byte
// big-endian length and that many bytes, at most 256 of them.
func splitBundle(b []byte) ([][]byte, error) {
	var leaves [][]byte
	for len(b) > 0 {
		if len(b) < 2 || len(leaves) == layout.EntryBundleWidth {
			return nil, errors.New("malformed entry bundle")
		}
		n := int(b[0])<<8 | int(b[1])
		if len(b) < 2+n {
			return nil, errors.New("entry bundle truncated")
		}
		leaves = append(leaves, b[2:2+n])
		b = b[2+n:]
	}
	return leaves, nil
}

// parseRow verifies leaf (strict entry form, kid, Ed25519 signature) and
// reads what the index keeps of it.
func parseRow(idx uint64, leaf []byte) *row {
	r := &row{Index: idx, Leaf: rfc6962.DefaultHasher.HashLeaf(leaf), Enforced: true}
	e, err := receipts.ParseEntry(leaf)
	if err != nil {
		r.Kind, r.Err = kindBad, clip(err.Error(), 300)
		return r
	}
	p := e.Payload
	str := func(k string) string { s, _ := p[k].(string); return s }
	num := func(k string) int64 {
		n, _ := p[k].(json.Number)
		i, _ := n.Int64()
		return i
	}
	ref := func(k string) []byte {
		if b, ok := parseRef(str(k)); ok {
			return b
		}
		return nil
	}
	// The receipt's chain hash, which ParseEntry computed.
	h := e.Hash
	r.Hash = h[:]
	r.Issuer, r.Session = e.KID, clip(e.SessionID, 200)
	r.Seq, r.ISeq, r.HW, r.Final = e.Sequence, num("issuer_sequence"), num("issuer_high_water"), num("final_sequence")
	r.Tool, r.Decision, r.Reason = clip(str("tool_name"), 200), clip(str("decision"), 40), clip(str("reason"), 80)
	r.Issued = clip(str("issued_at"), 40)
	if t, err := time.Parse(time.RFC3339Nano, r.Issued); err == nil {
		r.At = t.UnixMilli()
	}
	r.Prev, r.DecHash, r.Head = ref("previousReceiptHash"), ref("decision_receipt_hash"), ref("head_hash")
	if b, ok := p["enforced"].(bool); ok && !b {
		r.Enforced = false
	}
	if ids, ok := p["policy_ids"].([]any); ok {
		var names []string
		for _, id := range ids {
			if s, ok := id.(string); ok {
				names = append(names, s)
			}
		}
		r.Policies = clip(strings.Join(names, ", "), 300)
	}
	event := str("hook_event")
	switch {
	case str("type") == receipts.TypeLifecycle:
		r.Kind, r.Event = kindLifecycle, clip(str("lifecycle_event"), 40)
	case event == "unmediated_call":
		r.Kind, r.Event = kindUnmediated, event
	case event == "PostToolUse" || event == "PostToolUseFailure" || r.DecHash != nil:
		r.Kind, r.Event = kindExecution, clip(event, 40)
	default:
		r.Kind, r.Event = kindDecision, clip(event, 40)
	}
	return r
}

// clip cuts s to at most n bytes of whole characters, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = strings.ToValidUTF8(s[:n], "")
	return s + "…"
}

// checkpointFrom opens a stored checkpoint again with the verifier.
func checkpointFrom(v *c2sp.ProofVerifier, raw []byte) (*c2sp.Checkpoint, error) {
	if raw == nil {
		return nil, nil
	}
	return c2sp.OpenCheckpoint(v.LogKey(), raw)
}
