// Package tlogtest provides a transparency log for tests: a real RFC 6962
// Merkle tree and a real signed-note key, producing C2SP tlog-checkpoint
// notes, consistency proofs and C2SP tlog-witness add-checkpoint requests.
// The witness tests and the end-to-end scenarios share it.
package tlogtest

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
)

// A Log is a test log. Leaf i is "<origin> leaf i", so two Logs with the
// same origin grow the same tree unless a test appends to Tree itself.
// A Log is not safe for concurrent use.
type Log struct {
	Origin string
	VKey   string
	Signer note.Signer
	Tree   *testonly.Tree
}

// New returns an empty log with a fresh Ed25519 key named origin.
func New(origin string) *Log {
	skey, _, err := c2sp.GenerateKey(origin)
	if err != nil {
		panic(err) // only for an invalid origin: a test's mistake
	}
	l, err := FromKey(skey)
	if err != nil {
		panic(err)
	}
	return l
}

// FromKey returns an empty log signing with the note private key skey.
func FromKey(skey string) (*Log, error) {
	s, vkey, err := c2sp.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	return &Log{Origin: s.Name(), VKey: vkey, Signer: s, Tree: testonly.New(rfc6962.DefaultHasher)}, nil
}

// Grow appends leaves until the tree has size n.
func (l *Log) Grow(n uint64) {
	for l.Tree.Size() < n {
		l.Tree.AppendData(fmt.Appendf(nil, "%s leaf %d", l.Origin, l.Tree.Size()))
	}
}

// Checkpoint returns the checkpoint of size n, signed by the log's key.
func (l *Log) Checkpoint(n uint64) []byte {
	l.Grow(n)
	return SignCheckpoint(l.Origin, n, l.Tree.HashAt(n), l.Signer)
}

// SignCheckpoint returns a tlog-checkpoint note for origin, size n and root,
// signed by signers.
func SignCheckpoint(origin string, n uint64, root []byte, signers ...note.Signer) []byte {
	text := fmt.Sprintf("%s\n%d\n%s\n", origin, n, base64.StdEncoding.EncodeToString(root))
	signed, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		panic(err)
	}
	return signed
}

// Proof returns the c2sp.org/tlog-proof@v1 of entry index in the tree as it
// is, with its checkpoint signed by the log and by cosigners.
func (l *Log) Proof(index uint64, cosigners ...note.Signer) []byte {
	n := l.Tree.Size()
	ip, err := l.Tree.InclusionProof(index, n)
	if err != nil {
		panic(err)
	}
	tp := proof.TLogProof{Index: index}
	tp.Checkpoint = SignCheckpoint(l.Origin, n, l.Tree.HashAt(n), append([]note.Signer{l.Signer}, cosigners...)...)
	for _, h := range ip {
		tp.Hashes = append(tp.Hashes, [32]byte(h))
	}
	return tp.Marshal()
}

// Consistency returns the consistency proof from old to n: nil from 0, and
// copies of the tree's hashes, so that tests may corrupt them.
func (l *Log) Consistency(old, n uint64) [][]byte {
	if old == 0 {
		return nil
	}
	l.Grow(max(old, n))
	p, err := l.Tree.ConsistencyProof(old, n)
	if err != nil {
		panic(err)
	}
	for i := range p {
		p[i] = bytes.Clone(p[i])
	}
	return p
}

// AddCheckpoint returns a tlog-witness add-checkpoint request from old to n
// and the checkpoint it carries. A proof is included only when 0 < old <= n.
func (l *Log) AddCheckpoint(old, n uint64) (body, checkpoint []byte) {
	l.Grow(max(old, n))
	checkpoint = l.Checkpoint(n)
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	if old <= n {
		for _, h := range l.Consistency(old, n) {
			fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString(h))
		}
	}
	fmt.Fprintf(&b, "\n%s", checkpoint)
	return b.Bytes(), checkpoint
}
