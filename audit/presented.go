package audit

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/docketlog/docket/receipts"
)

// A presentedSet is what an audit keeps of the presented receipts once their
// chains are verified: for each, 44 bytes (its chain hash and where it
// was), never its bytes, and 4 more to find them by hash. Chains are read
// and verified a few at a time, on all cores.
type presentedSet struct {
	items  []presentedItem // in chain order
	byHash []uint32        // positions in items, sorted by hash
	kids   map[string]bool // the issuers of the presented receipts
}

type presentedItem struct {
	hash   [32]byte
	chain  uint32
	pos    uint32
	inLog  bool
	hashed bool // the receipt parsed: hash is its chain hash
}

// chainResult is what one presented chain's verification yields.
type chainResult struct {
	items   []presentedItem
	kids    []string
	invalid []Finding // invalid_receipt findings, then unconfined_call notices
	err     error
}

// verifyChains verifies the presented chains, GOMAXPROCS chains at a time,
// and returns the set of their receipts and the invalid_receipt findings
// and unconfined_call notices (confine.go) in chain order. The log has
// been read into l, and perm is l.byHash(): a presented receipt that is
// byte for byte a logged one is neither parsed nor verified again
// (logged.verify).
func verifyChains(keys *receipts.KeySet, chains []Chain, l *ledger, perm []uint32) (*presentedSet, []Finding, error) {
	lg := &logged{l: l, perm: perm, keys: keys}
	results := make([]chainResult, len(chains))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(chains), 1)) {
		wg.Go(func() {
			for i := range next {
				results[i] = lg.verifyChain(chains[i], uint32(i))
			}
		})
	}
	for i := range chains {
		next <- i
	}
	close(next)
	wg.Wait()

	ps := &presentedSet{kids: make(map[string]bool)}
	var invalid []Finding
	for _, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		invalid = append(invalid, r.invalid...)
		for _, k := range r.kids {
			ps.kids[k] = true
		}
		ps.items = append(ps.items, r.items...)
	}
	ps.byHash = make([]uint32, len(ps.items))
	for i := range ps.byHash {
		ps.byHash[i] = uint32(i)
	}
	slices.SortFunc(ps.byHash, func(a, b uint32) int {
		return cmp.Or(bytes.Compare(ps.items[a].hash[:], ps.items[b].hash[:]), cmp.Compare(a, b))
	})
	return ps, invalid, nil
}

// logged is the log as a verifier of presented chains reads it: the ledger
// of its entries, each verified when it was read, found by chain hash.
type logged struct {
	l    *ledger
	perm []uint32
	keys *receipts.KeySet
}

// verifyChain verifies one chain as docket verify does, and keeps 44
// bytes of each of its receipts. A chain whose every receipt is logged,
// byte for byte, is checked from the ledger's records (fromLog); any other
// is verified by receipts.VerifyChain, whose signature checks skip the
// receipts the log holds (known).
func (lg *logged) verifyChain(c Chain, idx uint32) chainResult {
	rs, err := c.receipts()
	if err != nil {
		return chainResult{err: fmt.Errorf("%s: %w", c.Source, err)}
	}
	var out chainResult
	if out.items, out.kids = lg.fromLog(rs, idx); out.items == nil {
		out.items, out.kids, out.invalid = nil, nil, nil
		kids := make(map[string]bool)
		for i, res := range receipts.VerifyChain(rs, receipts.Options{Keys: lg.keys, Known: lg.known}) {
			it := presentedItem{chain: idx, pos: uint32(i)}
			if h, ok := chainHash(res.Hash); ok {
				it.hash, it.hashed = h, true
			}
			if res.KID != "" && !kids[res.KID] {
				kids[res.KID] = true
				out.kids = append(out.kids, res.KID)
			}
			out.items = append(out.items, it)
			if res.Outcome != receipts.Valid {
				out.invalid = append(out.invalid, Finding{Kind: KindInvalidReceipt, Issuer: res.KID, Source: c.Source, Sequence: int64(i + 1),
					Message: fmt.Sprintf("%s receipt %d: %s: %s: %s", c.Source, i+1, res.Outcome, res.Cause, res.Detail)})
			}
		}
	}
	// While the chain's bytes are at hand: each chain is read once.
	out.invalid = append(out.invalid, unconfinedCalls(lg.keys, Chain{Source: c.Source, Receipts: rs})...)
	return out
}

// known is a receipts.Options.Known: the receipt with this chain hash is
// logged, and its entry, which verified when the log was read, is signed
// by pub.
func (lg *logged) known(hash string, pub ed25519.PublicKey) bool {
	h, ok := chainHash(hash)
	if !ok {
		return false
	}
	p, ok := lg.l.find(lg.perm, h)
	if !ok {
		return false
	}
	r := &lg.l.recs[p]
	return r.flags&flagOtherKey == 0 && uint64(p) >= lg.l.factsFrom && lg.l.issuers[r.issuer].pub.Equal(pub)
}

// fromLog returns the items and issuers of a chain whose every receipt is
// logged byte for byte (its SHA-256 is a logged receipt's chain hash) and,
// read from the records of the log entries, valid as receipts.VerifyChain
// would find it: signed by the trusted key of its kid, which has no
// validity window, with a draft-04 issuer_id that is the kid; linking its
// predecessor's chain hash, with the next sequence number, in the same
// session; and an execution only, and each linked to an earlier
// executable decision of the chain with the same tool (the same tool name
// and tool input hash) and decision. It returns nil for any other chain,
// which is then verified receipt by receipt: what the records cannot
// settle is never taken as valid.
func (lg *logged) fromLog(rs [][]byte, idx uint32) ([]presentedItem, []string) {
	if len(rs) == 0 {
		return nil, nil
	}
	l := lg.l
	items := make([]presentedItem, len(rs))
	var kids []string
	var prev *rec
	decisions := make(map[[32]byte]uint32) // executable decisions by chain hash → position
	for i, data := range rs {
		h := sha256.Sum256(data)
		p, ok := l.find(lg.perm, h)
		if !ok || uint64(p) < l.factsFrom {
			return nil, nil
		}
		r := &l.recs[p]
		is := &l.issuers[r.issuer]
		key, ok := lg.keys.Lookup(is.kid)
		const decisionFlags = flagAllow | flagDeny | flagApproval
		switch {
		case !ok, receipts.KID(key.Public) != is.kid, !key.Public.Equal(is.pub), !key.ValidFrom.IsZero(), !key.ValidUntil.IsZero(),
			r.flags&(flagOtherKey|flagIDMismatch) != 0:
			return nil, nil
		case prev != nil && (r.flags&flagPrevHash == 0 || r.prev != prev.hash || prev.seq < 1 || r.seq != prev.seq+1 || r.session != prev.session):
			return nil, nil
		case r.flags&flagExecution != 0:
			if r.flags&flagLinkHash == 0 || r.flags&decisionFlags == 0 {
				return nil, nil
			}
			x, _ := slices.BinarySearchFunc(l.execs, p, func(x link, p uint32) int { return cmp.Compare(x.pos, p) })
			d, ok := decisions[l.execs[x].hash]
			if !ok {
				return nil, nil
			}
			rfp, rok := l.fp(p)
			dfp, dok := l.fp(d)
			if !rok || !dok || rfp != dfp || r.flags&decisionFlags != l.recs[d].flags&decisionFlags {
				return nil, nil
			}
		case r.flags&flagRef != 0:
			return nil, nil // only an execution links a decision
		case r.flags&flagPreToolUse != 0 && (r.flags&(flagAllow|flagApproval) != 0 || r.flags&(flagDeny|flagUnenforced) == flagDeny|flagUnenforced):
			decisions[r.hash] = p
		}
		if !slices.Contains(kids, is.kid) {
			kids = append(kids, is.kid)
		}
		items[i] = presentedItem{hash: h, chain: idx, pos: uint32(i), hashed: true}
		prev = r
	}
	return items, kids
}

// find returns the positions in byHash of the presented receipts with
// chain hash h.
func (ps *presentedSet) find(h [32]byte) []uint32 {
	if ps == nil {
		return nil
	}
	i, _ := slices.BinarySearchFunc(ps.byHash, h, func(p uint32, h [32]byte) int { return bytes.Compare(ps.items[p].hash[:], h[:]) })
	j := i
	for j < len(ps.byHash) && ps.items[ps.byHash[j]].hash == h && ps.items[ps.byHash[j]].hashed {
		j++
	}
	return ps.byHash[i:j]
}

// has reports whether a receipt with chain hash h was presented.
func (ps *presentedSet) has(h [32]byte) bool { return len(ps.find(h)) > 0 }
