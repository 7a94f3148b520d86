package receipts

import (
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/subtle"
	"sync"
	"sync/atomic"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// Receipt verification is dominated by Ed25519, and the keys repeat: a log
// sees the same few issuers over and over, and a chain is signed by one key.
// crypto/ed25519.Verify computes R' = [S]B - [k]A with about 253 doublings
// for every signature. verifyEd25519 instead keeps, for each key verified
// often enough, a table of the multiples j·16^i·A (as crypto/ed25519 keeps
// one for the base point B when it signs), so that R' costs about 128
// mixed additions and no doublings: two to three times faster.
//
// It is a different way to compute the same group element, so the answer
// is crypto/ed25519.Verify's for every input (RFC 8032 cofactorless
// equation, S < L, the same point decoding); the tests check it against
// crypto/ed25519 on valid, mutated and adversarial signatures and by
// fuzzing. Verification handles only public data, so it may take variable
// time.

// tableAfter is how many verifications with a key go to crypto/ed25519
// before the key gets a table; building one costs about three verifications.
const tableAfter = 3

// maxTables bounds the memory of the cache: a table is 61,440 bytes. The
// cache forgets every key once it holds 4·maxTables of them; keys past
// maxTables until then are verified by crypto/ed25519.
const maxTables = 256

// niels is a point in the affine form the mixed addition wants:
// y+x, y-x and 2·d·x·y.
type niels struct{ ypx, ymx, xy2d field.Element }

// multiples holds j·16^i·P for i < 64 and 1 ≤ j ≤ 8: with the scalar in
// signed base-16 digits, [s]P is one addition per nonzero digit.
type multiples [64][8]niels

// baseMultiples is the table of the base point B.
var baseMultiples = sync.OnceValue(func() *multiples { return newMultiples(edwards25519.NewGeneratorPoint()) })

// d2 is 2·d, the curve constant the additions need (d = -121665/121666).
var d2 = sync.OnceValue(func() *field.Element {
	var n, m, v field.Element
	n.SetBytes(le32(121665))
	m.SetBytes(le32(121666))
	v.Multiply(&n, m.Invert(&m))
	v.Negate(&v)
	return v.Add(&v, &v)
})

// keyEntry counts the verifications with one key and holds its table once
// built.
type keyEntry struct {
	uses  atomic.Int64
	once  sync.Once
	bad   bool       // the key does not decode
	table *multiples // nil when bad or past maxTables
}

var keyCache struct {
	sync.Mutex // guards m
	m          map[[32]byte]*keyEntry
	tables     atomic.Int64 // built since m was last emptied
}

// verifyEd25519 reports whether sig is a valid Ed25519 signature of msg by
// pub, exactly as crypto/ed25519.Verify does. Safe for concurrent use.
func verifyEd25519(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	e := keyEntryFor([32]byte(pub))
	if e.uses.Add(1) <= tableAfter {
		return ed25519.Verify(pub, msg, sig)
	}
	e.once.Do(func() {
		A, err := new(edwards25519.Point).SetBytes(pub)
		if err != nil {
			e.bad = true
			return
		}
		if keyCache.tables.Add(1) <= maxTables {
			e.table = newMultiples(A)
		} else {
			keyCache.tables.Add(-1)
		}
	})
	switch {
	case e.bad:
		return false // A does not decode: crypto/ed25519 says false too
	case e.table == nil:
		return ed25519.Verify(pub, msg, sig)
	}
	return verifyWith(e.table, pub, msg, sig)
}

// keyEntryFor returns the cache entry of pub, making one if needed.
func keyEntryFor(pub [32]byte) *keyEntry {
	keyCache.Lock()
	defer keyCache.Unlock()
	if e, ok := keyCache.m[pub]; ok {
		return e
	}
	if keyCache.m == nil || len(keyCache.m) >= 4*maxTables {
		// Forget everything rather than track recency: the keys still in
		// use earn their tables again after tableAfter verifications.
		keyCache.m = make(map[[32]byte]*keyEntry)
		keyCache.tables.Store(0)
	}
	e := &keyEntry{}
	keyCache.m[pub] = e
	return e
}

// verifyWith is crypto/ed25519's verification with the table of A.
func verifyWith(tableA *multiples, pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize || sig[63]&224 != 0 {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(pub)
	h.Write(msg)
	var digest [64]byte
	k, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false
	}
	S, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	// R' = [S]B - [k]A, accumulated in extended coordinates.
	tableB := baseMultiples()
	var acc extended
	acc.identity()
	ds, dk := digits(S.Bytes()), digits(k.Bytes())
	for i := range 64 {
		acc.add(&tableB[i], ds[i])
		acc.add(&tableA[i], -dk[i])
	}
	R, err := new(edwards25519.Point).SetExtendedCoordinates(&acc.X, &acc.Y, &acc.Z, &acc.T)
	if err != nil {
		return false // cannot happen: the additions stay on the curve
	}
	return subtle.ConstantTimeCompare(sig[:32], R.Bytes()) == 1
}

// digits returns the signed base-16 digits of a scalar below 2^255 (the
// 32-byte little-endian encoding of a reduced scalar): s = Σ d[i]·16^i with
// -8 ≤ d[i] ≤ 8.
func digits(s []byte) [64]int8 {
	var d [64]int8
	for i, b := range s {
		d[2*i] = int8(b & 15)
		d[2*i+1] = int8(b >> 4)
	}
	var carry int8
	for i := range 63 {
		d[i] += carry
		carry = (d[i] + 8) >> 4
		d[i] -= carry << 4
	}
	d[63] += carry
	return d
}

// newMultiples computes the table of P.
func newMultiples(P *edwards25519.Point) *multiples {
	pts := new([64][8]edwards25519.Point)
	base := new(edwards25519.Point).Set(P)
	for i := range 64 {
		pts[i][0].Set(base)
		for j := 1; j < 8; j++ {
			pts[i][j].Add(&pts[i][j-1], base)
		}
		base.Add(&pts[i][7], &pts[i][7]) // 16·base
	}
	// To affine coordinates, with one inversion for all 512 points
	// (Montgomery's trick).
	var zs, inv [64 * 8]field.Element
	var xs, ys [64 * 8]*field.Element
	for n := range zs {
		X, Y, Z, _ := pts[n/8][n%8].ExtendedCoordinates()
		xs[n], ys[n] = X, Y
		zs[n].Set(Z)
	}
	var acc field.Element
	acc.One()
	for n := range zs {
		inv[n].Set(&acc) // product of the z before n
		acc.Multiply(&acc, &zs[n])
	}
	acc.Invert(&acc)
	for n := len(zs) - 1; n >= 0; n-- {
		inv[n].Multiply(&inv[n], &acc) // 1/z[n]
		acc.Multiply(&acc, &zs[n])
	}
	m := new(multiples)
	var x, y field.Element
	for n := range zs {
		x.Multiply(xs[n], &inv[n])
		y.Multiply(ys[n], &inv[n])
		e := &m[n/8][n%8]
		e.ypx.Add(&y, &x)
		e.ymx.Subtract(&y, &x)
		e.xy2d.Multiply(&x, &y)
		e.xy2d.Multiply(&e.xy2d, d2())
	}
	return m
}

func le32(v uint32) []byte {
	b := make([]byte, 32)
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	return b
}

// extended is a point in extended twisted Edwards coordinates
// (x = X/Z, y = Y/Z, x·y = T/Z).
type extended struct{ X, Y, Z, T field.Element }

func (p *extended) identity() {
	p.X.Zero()
	p.Y.One()
	p.Z.One()
	p.T.Zero()
}

// add sets p to p + d·Q, where row holds j·Q for j = 1..8 and -8 ≤ d ≤ 8.
// The formulas (Hisil, Wong, Carter, Dawson 2008, a = -1, as ref10's
// ge_madd and ge_msub) are complete: they hold for every pair of points.
func (p *extended) add(row *[8]niels, d int8) {
	if d == 0 {
		return
	}
	q := &row[abs8(d)-1]
	ypx, ymx := &q.ypx, &q.ymx
	if d < 0 { // -Q swaps y+x and y-x and negates x·y
		ypx, ymx = ymx, ypx
	}
	var a, b, c, dd, e, f, g, h field.Element
	a.Add(&p.Y, &p.X)
	a.Multiply(&a, ypx)
	b.Subtract(&p.Y, &p.X)
	b.Multiply(&b, ymx)
	c.Multiply(&p.T, &q.xy2d)
	dd.Add(&p.Z, &p.Z)
	e.Subtract(&a, &b)
	h.Add(&a, &b)
	if d > 0 {
		g.Add(&dd, &c)
		f.Subtract(&dd, &c)
	} else {
		g.Subtract(&dd, &c)
		f.Add(&dd, &c)
	}
	p.X.Multiply(&e, &f)
	p.Y.Multiply(&h, &g)
	p.Z.Multiply(&g, &f)
	p.T.Multiply(&e, &h)
}

func abs8(d int8) int8 {
	if d < 0 {
		return -d
	}
	return d
}
