package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/docketlog/docket/receipts"
)

// A presentedSet is what an audit keeps of the presented receipts once their
// chains are verified: for each, 4 bytes (where the log holds it), never
// its bytes; and for each that parsed but is not in the log, its chain
// hash. Chains are read and verified a few at a time, on all cores.
type presentedSet struct {
	// first[c] is the position in at of chain c's first receipt; one more
	// holds the number of receipts.
	first []uint32
	// at holds, per receipt in chain order, 1 + the position of the log
	// entry that holds it byte for byte, or 0.
	at []uint32
	// unlogged holds the chain hashes of the receipts that parsed and are
	// not in the log, by position in at; unloggedHash the same, by hash.
	unlogged     map[uint32][32]byte
	unloggedHash map[[32]byte]bool
	kids         map[string]bool // the issuers of the presented receipts
}

// chainResult is what one presented chain's verification yields.
type chainResult struct {
	at       []uint32 // as presentedSet.at
	unlogged map[uint32][32]byte
	kids     []string
	invalid  []Finding // invalid_receipt findings, then unconfined_call notices
	err      error
}

// verifyChains verifies the presented chains, GOMAXPROCS chains at a time,
// and returns the set of their receipts and the invalid_receipt findings
// and unconfined_call notices (confine.go) in chain order. The log has
// been read into l, and perm is l.byHash(): a presented receipt that is
// byte for byte a logged one is neither parsed nor verified again
// (logged.verifyChain).
func verifyChains(keys *receipts.KeySet, chains []Chain, l *ledger, perm []uint32) (*presentedSet, []Finding, error) {
	lg := newLogged(l, perm, keys)
	results := make([]chainResult, len(chains))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(chains), 1)) {
		wg.Go(func() {
			for i := range next {
				results[i] = lg.verifyChain(chains[i])
			}
		})
	}
	for i := range chains {
		next <- i
	}
	close(next)
	wg.Wait()

	ps := &presentedSet{first: make([]uint32, 0, len(chains)+1), unlogged: make(map[uint32][32]byte), unloggedHash: make(map[[32]byte]bool), kids: make(map[string]bool)}
	n := 0
	for _, r := range results {
		n += len(r.at)
	}
	if n > math.MaxUint32 {
		return nil, nil, fmt.Errorf("%d presented receipts: an audit compares at most 2^32", n)
	}
	ps.at = make([]uint32, 0, n)
	var invalid []Finding
	for i := range results {
		r := &results[i]
		if r.err != nil {
			return nil, nil, r.err
		}
		invalid = append(invalid, r.invalid...)
		for _, k := range r.kids {
			ps.kids[k] = true
		}
		base := uint32(len(ps.at))
		ps.first = append(ps.first, base)
		ps.at = append(ps.at, r.at...)
		for pos, h := range r.unlogged {
			ps.unlogged[base+pos] = h
			ps.unloggedHash[h] = true
		}
		*r = chainResult{} // its memory is garbage now
	}
	ps.first = append(ps.first, uint32(len(ps.at)))
	return ps, invalid, nil
}

// has reports whether a receipt with chain hash h was presented: a logged
// one (l, perm as byHash sorted it, and the entries presented), or not.
func (ps *presentedSet) has(l *ledger, perm []uint32, presented bitset, h [32]byte) bool {
	if ps.unloggedHash[h] {
		return true
	}
	p, ok := l.find(perm, h)
	return ok && presented.has(uint64(p))
}

// chain returns the receipts of chain c as positions in ps.at.
func (ps *presentedSet) chain(c int) (from, to uint32) { return ps.first[c], ps.first[c+1] }

// logged is the log as a verifier of presented chains reads it: the ledger
// of its entries, each verified when it was read, found by chain hash.
type logged struct {
	l    *ledger
	perm []uint32
	keys *receipts.KeySet
	// trusted[id] reports whether issuer id's public key is the trusted
	// key of its kid, without a validity window.
	trusted []bool
}

func newLogged(l *ledger, perm []uint32, keys *receipts.KeySet) *logged {
	lg := &logged{l: l, perm: perm, keys: keys, trusted: make([]bool, len(l.issuers))}
	for id, is := range l.issuers {
		key, ok := keys.Lookup(is.kid)
		lg.trusted[id] = ok && key.Public.Equal(is.pub) && receipts.KID(key.Public) == is.kid && key.ValidFrom.IsZero() && key.ValidUntil.IsZero()
	}
	return lg
}

// verifyChain verifies one chain as docket verify does, and keeps where
// the log holds each of its receipts. A chain whose every receipt is
// logged, byte for byte, is checked from the ledger's records (fromLog);
// any other is verified by receipts.VerifyChain, whose signature checks
// skip the receipts the log holds (known).
func (lg *logged) verifyChain(c Chain) chainResult {
	rs, err := c.receipts()
	if err != nil {
		return chainResult{err: fmt.Errorf("%s: %w", c.Source, err)}
	}
	var out chainResult
	if out.at, out.kids = lg.fromLog(rs); out.at == nil {
		out.at, out.kids = make([]uint32, len(rs)), nil
		kids := make(map[string]bool)
		for i, res := range receipts.VerifyChain(rs, receipts.Options{Keys: lg.keys, Known: lg.known}) {
			if h, ok := chainHash(res.Hash); ok {
				if p, ok := lg.l.find(lg.perm, h); ok {
					out.at[i] = p + 1
				} else {
					if out.unlogged == nil {
						out.unlogged = make(map[uint32][32]byte)
					}
					out.unlogged[uint32(i)] = h
				}
			}
			if res.KID != "" && !kids[res.KID] {
				kids[res.KID] = true
				out.kids = append(out.kids, res.KID)
			}
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

// fromLog returns the log positions (plus one) and issuers of a chain whose every receipt is
// logged byte for byte (its SHA-256 is a logged receipt's chain hash) and,
// read from the records of the log entries, valid as receipts.VerifyChain
// would find it: signed by the trusted key of its kid, which has no
// validity window, with a draft-04 issuer_id that is the kid; linking its
// predecessor's chain hash (the ledger settled, as it added the entry,
// that it links the first entry of the previous sequence, and the
// predecessor is that entry), with the next sequence number, in the same
// session; and an execution only, and each linked to an earlier
// executable decision of the chain with the same tool (the same tool name
// and tool input hash) and decision. It returns nil for any other chain,
// which is then verified receipt by receipt: what the records cannot
// settle is never taken as valid.
func (lg *logged) fromLog(rs [][]byte) ([]uint32, []string) {
	if len(rs) == 0 {
		return nil, nil
	}
	l := lg.l
	at := make([]uint32, len(rs))
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
		const decisionFlags = flagAllow | flagDeny | flagApproval
		switch {
		case !lg.trusted[r.issuer], r.flags&(flagOtherKey|flagIDMismatch) != 0:
			return nil, nil
		case prev != nil && (r.flags&flagLinked == 0 || prev.flags&flagFirst == 0 || r.seq != prev.seq+1 || r.issuer != prev.issuer || r.session != prev.session):
			// r links the first entry of its chain's previous sequence,
			// which prev is.
			return nil, nil
		case r.flags&flagExecution != 0:
			if r.flags&flagLinkHash == 0 || r.flags&decisionFlags == 0 {
				return nil, nil
			}
			d, ok := decisions[l.linkHash(p)]
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
		at[i] = p + 1
		prev = r
	}
	return at, kids
}
