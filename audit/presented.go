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
// chains are verified: for each, 48 bytes (its chain hash, where it was,
// and the key that verified it), never its bytes. Chains are read and
// verified a few at a time, on all cores.
type presentedSet struct {
	items  []presentedItem // in chain order
	byHash []uint32        // positions in items, sorted by hash
	keys   []ed25519.PublicKey
	kids   map[string]bool // the issuers of the presented receipts
}

type presentedItem struct {
	hash  [32]byte
	chain uint32
	pos   uint32
	// key is 1 + the index in keys of the trusted key that verified the
	// receipt when it is valid and its bytes are its JCS form (so that a
	// log entry holding the same receipt holds these very bytes); else 0.
	key    uint16
	inLog  bool
	hashed bool // the receipt parsed: hash is its chain hash
}

// chainResult is what one presented chain's verification yields.
type chainResult struct {
	items   []presentedItem
	keys    []ed25519.PublicKey // by items[i].key-1, local to the chain
	kids    []string
	invalid []Finding // invalid_receipt findings, then unconfined_call notices
	err     error
}

// verifyChains verifies the presented chains, GOMAXPROCS chains at a time,
// and returns the set of their receipts and the invalid_receipt findings
// and unconfined_call notices (confine.go) in chain order.
// known, if not nil, vouches for receipts verified before (receipts.Options.Known).
func verifyChains(keys *receipts.KeySet, chains []Chain, known func(string, ed25519.PublicKey) bool) (*presentedSet, []Finding, error) {
	results := make([]chainResult, len(chains))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(chains), 1)) {
		wg.Go(func() {
			for i := range next {
				results[i] = verifyChain(receipts.Options{Keys: keys, Known: known}, chains[i], uint32(i))
			}
		})
	}
	for i := range chains {
		next <- i
	}
	close(next)
	wg.Wait()

	ps := &presentedSet{kids: make(map[string]bool)}
	keyIdx := make(map[string]uint16)
	var invalid []Finding
	for _, r := range results {
		if r.err != nil {
			return nil, nil, r.err
		}
		invalid = append(invalid, r.invalid...)
		for _, k := range r.kids {
			ps.kids[k] = true
		}
		for _, it := range r.items {
			if it.key > 0 {
				pub := r.keys[it.key-1]
				id, ok := keyIdx[string(pub)]
				if !ok && len(ps.keys) < 1<<16-1 {
					ps.keys = append(ps.keys, pub)
					id = uint16(len(ps.keys))
					keyIdx[string(pub)] = id
				}
				it.key = id // 0 past 65,535 keys: verified again from the log
			}
			ps.items = append(ps.items, it)
		}
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

// verifyChain verifies one chain as docket verify does, and keeps 48
// bytes of each of its receipts.
func verifyChain(opts receipts.Options, c Chain, idx uint32) chainResult {
	rs, err := c.receipts()
	if err != nil {
		return chainResult{err: fmt.Errorf("%s: %w", c.Source, err)}
	}
	var out chainResult
	kids := make(map[string]bool)
	for i, res := range receipts.VerifyChain(rs, opts) {
		it := presentedItem{chain: idx, pos: uint32(i)}
		if h, ok := chainHash(res.Hash); ok {
			it.hash, it.hashed = h, true
		}
		if res.KID != "" && !kids[res.KID] {
			kids[res.KID] = true
			out.kids = append(out.kids, res.KID)
		}
		if res.Outcome == receipts.Valid && it.hashed && res.Key != nil && sha256.Sum256(rs[i]) == it.hash {
			k := slices.IndexFunc(out.keys, func(k ed25519.PublicKey) bool { return k.Equal(res.Key) })
			if k < 0 {
				out.keys = append(out.keys, res.Key)
				k = len(out.keys) - 1
			}
			it.key = uint16(k + 1)
		}
		out.items = append(out.items, it)
		if res.Outcome != receipts.Valid {
			out.invalid = append(out.invalid, Finding{Kind: KindInvalidReceipt, Issuer: res.KID, Source: c.Source, Sequence: int64(i + 1),
				Message: fmt.Sprintf("%s receipt %d: %s: %s: %s", c.Source, i+1, res.Outcome, res.Cause, res.Detail)})
		}
	}
	// While the chain's bytes are at hand: each chain is read once.
	out.invalid = append(out.invalid, unconfinedCalls(opts.Keys, Chain{Source: c.Source, Receipts: rs})...)
	return out
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

// known reports whether a presented receipt with chain hash h, byte for
// byte the logged one, was verified with pub: the log entry's signature
// then need not be checked again. It is safe for concurrent use.
func (ps *presentedSet) known(h [32]byte, pub ed25519.PublicKey) (int, bool) {
	for _, p := range ps.find(h) {
		if k := ps.items[p].key; k > 0 && ps.keys[k-1].Equal(pub) {
			return int(p) + 1, true
		}
	}
	return 0, false
}
