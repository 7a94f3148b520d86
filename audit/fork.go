package audit

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/bits"

	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
)

// ForkEvidence builds the evidence that two checkpoints of one log, oldCP
// (size oldSize) and newCP (size newSize, read through f), are of diverging
// trees: the consistency path from oldSize to newSize taken from the new
// tree's tiles, starting with the new tree's own node for [0, oldSize). If
// that path reproduces newCP's root and not oldCP's, the new tree does not
// extend the old one, and a SHA-256 collision is the only other way.
// VerifyEvidence checks it.
func ForkEvidence(ctx context.Context, f Fetcher, oldCP []byte, oldSize uint64, newCP []byte, newSize uint64) (*Evidence, error) {
	ev := &Evidence{Kind: KindFork, Checkpoints: []string{string(oldCP), string(newCP)}}
	if oldSize == newSize || oldSize == 0 {
		return ev, nil
	}
	if oldSize > newSize {
		return nil, fmt.Errorf("old size %d is above new size %d", oldSize, newSize)
	}
	pb, err := NewProofBuilder(ctx, f, newSize)
	if err != nil {
		return nil, fmt.Errorf("building a consistency proof: %w", err)
	}
	path, err := pb.ConsistencyProof(ctx, oldSize, newSize)
	if err != nil {
		return nil, fmt.Errorf("building a consistency proof: %w", err)
	}
	if oldSize&(oldSize-1) == 0 {
		// RFC 9162 leaves out the node for [0, oldSize) when it is the old
		// root itself; fork evidence needs the new tree's version of it.
		node, err := perfectNode(ctx, f, uint(bits.TrailingZeros64(oldSize)), newSize)
		if err != nil {
			return nil, fmt.Errorf("reading the node [0, %d): %w", oldSize, err)
		}
		path = append([][]byte{node}, path...)
	}
	ev.ConsistencyProof = b64s(path)
	return ev, nil
}

// consistencyRoots runs the RFC 9162 §2.1.4.2 verification of a consistency
// path from size m to size n and returns the two roots it computes, where
// full paths (as ForkEvidence writes them) always start with the node for
// [0, m), also when m is a power of two.
func consistencyRoots(m, n uint64, path [][]byte) (fr, sr []byte, err error) {
	if m == 0 || m >= n || len(path) == 0 {
		return nil, nil, fmt.Errorf("%w: no consistency path from %d to %d", ErrBadEvidence, m, n)
	}
	h := rfc6962.DefaultHasher
	fn, sn := m-1, n-1
	s := bits.TrailingZeros64(^fn) // RFC step 4: shift off fn's low one bits
	fn >>= s
	sn >>= s
	fr, sr = path[0], path[0]
	for _, c := range path[1:] {
		if sn == 0 {
			return nil, nil, fmt.Errorf("%w: consistency path too long", ErrBadEvidence)
		}
		if fn&1 == 1 || fn == sn {
			fr = h.HashChildren(c, fr)
			sr = h.HashChildren(c, sr)
			if fn&1 == 0 {
				for fn&1 == 0 && fn != 0 {
					fn >>= 1
					sn >>= 1
				}
			}
		} else {
			sr = h.HashChildren(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return nil, nil, fmt.Errorf("%w: consistency path too short", ErrBadEvidence)
	}
	return fr, sr, nil
}

// proveFork checks full-path fork evidence between trees (m, rootM) and
// (n, rootN), m < n.
func proveFork(m uint64, rootM []byte, n uint64, rootN []byte, proof []string) (bool, error) {
	path := make([][]byte, len(proof))
	for i, s := range proof {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			return false, fmt.Errorf("%w: proof hash %d is not 32 bytes of base64", ErrBadEvidence, i)
		}
		path[i] = b
	}
	fr, sr, err := consistencyRoots(m, n, path)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(sr, rootN) {
		return false, fmt.Errorf("%w: the consistency path does not lead to the new checkpoint's root", ErrBadEvidence)
	}
	return !bytes.Equal(fr, rootM), nil
}

// perfectNode returns the hash of the node [0, 2^level) of the tree of size
// n, read from the hash tile of level level/8 that holds its descendants.
func perfectNode(ctx context.Context, f Fetcher, level uint, n uint64) ([]byte, error) {
	tl := uint64(level / 8)
	w := uint64(1) << (level % 8)
	width := min(256, n>>(8*tl))
	if width < w {
		return nil, fmt.Errorf("tree of size %d has no node [0, %d)", n, uint64(1)<<level)
	}
	p := uint8(width % 256)
	b, err := tileReader(f)(ctx, tl, 0, p)
	if err != nil {
		return nil, err
	}
	var tile api.HashTile
	if err := tile.UnmarshalText(b); err != nil || uint64(len(tile.Nodes)) < w {
		return nil, fmt.Errorf("hash tile %d/0 of width %d: %d nodes, %v", tl, width, len(tile.Nodes), err)
	}
	nodes := tile.Nodes[:w]
	for len(nodes) > 1 {
		next := make([][]byte, len(nodes)/2)
		for i := range next {
			next[i] = rfc6962.DefaultHasher.HashChildren(nodes[2*i], nodes[2*i+1])
		}
		nodes = next
	}
	return nodes[0], nil
}
