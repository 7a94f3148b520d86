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
// often enough, a table of the multiples j·64^i·A (as crypto/ed25519 keeps
// one for the base point B when it signs), and one of j·256^i·B, so that R'
// costs about 75 mixed additions and no doublings: three to four times
// faster.
//
// It is a different way to compute the same group element, so the answer
// is crypto/ed25519.Verify's for every input (RFC 8032 cofactorless
// equation, S < L, the same point decoding); the tests check it against
// crypto/ed25519 on valid, mutated and adversarial signatures and by
// fuzzing. Verification handles only public data, so it may take variable
// time.

// tableAfter is how many verifications with a key go to crypto/ed25519
// before the key gets a table; building one costs about as much as
// tableAfter verifications.
const tableAfter = 12

// keyWindow and baseWindow are the digit widths of the tables, in bits:
// with the scalar in signed base-2^w digits, [s]P is one addition per
// nonzero digit, from a table of 2^(w-1) multiples per digit. A key's table
// (w = 6: 43 rows of 32, 165,120 bytes) takes 43 additions; the base
// point's, built once (w = 8: 32 rows of 128, 491,520 bytes), 32.
const (
	keyWindow  = 6
	baseWindow = 8
)

// maxTables bounds the memory of the cache: a key's table is 165,120
// bytes, so at most ~21 MB. The cache forgets every key once it holds
// 4·maxTables of them; keys past maxTables until then are verified by
// crypto/ed25519.
const maxTables = 128

// niels is a point in the affine form the mixed addition wants:
// y+x, y-x and 2·d·x·y.
type niels struct{ ypx, ymx, xy2d field.Element }

// multiples holds j·2^(w·i)·P for i < numDigits(w) and 1 ≤ j ≤ 2^(w-1),
// row after row.
type multiples struct {
	w   uint
	per int // 2^(w-1), the multiples in a row
	t   []niels
}

// entry returns the row of digit i and the multiple |d| in it.
func (m *multiples) entry(i int, d int32) *niels {
	if d < 0 {
		d = -d
	}
	return &m.t[i*m.per+int(d)-1]
}

// baseMultiples is the table of the base point B.
var baseMultiples = sync.OnceValue(func() *multiples { return newMultiples(edwards25519.NewGeneratorPoint(), baseWindow) })

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
			e.table = newMultiples(A, keyWindow)
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
	var ds, dk [64]int32
	nb, na := digits(S.Bytes(), tableB.w, &ds), digits(k.Bytes(), tableA.w, &dk)
	for i, d := range ds[:nb] {
		if d != 0 {
			acc.add(tableB.entry(i, d), d < 0)
		}
	}
	for i, d := range dk[:na] {
		if d != 0 {
			acc.add(tableA.entry(i, d), d > 0) // -[k]A
		}
	}
	R, err := new(edwards25519.Point).SetExtendedCoordinates(&acc.X, &acc.Y, &acc.Z, &acc.T)
	if err != nil {
		return false // cannot happen: the additions stay on the curve
	}
	return subtle.ConstantTimeCompare(sig[:32], R.Bytes()) == 1
}

// numDigits is the number of signed base-2^w digits of a scalar below
// 2^253 (every reduced scalar: L < 2^253).
func numDigits(w uint) int { return (253 + int(w) - 1) / int(w) }

// digits sets d to the signed base-2^w digits (1 ≤ w ≤ 8) of a scalar
// below 2^253, given as its 32-byte little-endian encoding: s = Σ d[i]·2^(w·i)
// with -2^(w-1) ≤ d[i] ≤ 2^(w-1). It returns the number of digits.
func digits(s []byte, w uint, d *[64]int32) int {
	n := numDigits(w)
	mask := uint32(1)<<w - 1
	for i := range n {
		off := uint(i) * w
		j := off / 8
		v := uint32(s[j])
		if j+1 < 32 {
			v |= uint32(s[j+1]) << 8
		}
		d[i] = int32(v >> (off % 8) & mask)
	}
	var carry int32
	half := int32(1) << (w - 1)
	for i := range n - 1 {
		d[i] += carry
		carry = (d[i] + half) >> w
		d[i] -= carry << w
	}
	d[n-1] += carry
	return n
}

// newMultiples computes the table of P for digits of w bits.
func newMultiples(P *edwards25519.Point, w uint) *multiples {
	n, per := numDigits(w), 1<<(w-1)
	pts := make([]edwards25519.Point, n*per)
	base := new(edwards25519.Point).Set(P)
	for i := range n {
		row := pts[i*per : (i+1)*per]
		row[0].Set(base)
		for j := 1; j < per; j++ {
			row[j].Add(&row[j-1], base)
		}
		base.Add(&row[per-1], &row[per-1]) // 2^w·base
	}
	// To affine coordinates, with one inversion for all the points
	// (Montgomery's trick).
	zs, inv := make([]field.Element, len(pts)), make([]field.Element, len(pts))
	xs, ys := make([]*field.Element, len(pts)), make([]*field.Element, len(pts))
	for k := range pts {
		X, Y, Z, _ := pts[k].ExtendedCoordinates()
		xs[k], ys[k] = X, Y
		zs[k].Set(Z)
	}
	var acc field.Element
	acc.One()
	for k := range zs {
		inv[k].Set(&acc) // product of the z before k
		acc.Multiply(&acc, &zs[k])
	}
	acc.Invert(&acc)
	for k := len(zs) - 1; k >= 0; k-- {
		inv[k].Multiply(&inv[k], &acc) // 1/z[k]
		acc.Multiply(&acc, &zs[k])
	}
	m := &multiples{w: w, per: per, t: make([]niels, len(pts))}
	var x, y field.Element
	for k := range zs {
		x.Multiply(xs[k], &inv[k])
		y.Multiply(ys[k], &inv[k])
		e := &m.t[k]
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

// add sets p to p + Q, or p - Q when neg. The formulas (Hisil, Wong,
// Carter, Dawson 2008, a = -1, as ref10's ge_madd and ge_msub) are
// complete: they hold for every pair of points.
func (p *extended) add(q *niels, neg bool) {
	ypx, ymx := &q.ypx, &q.ymx
	if neg { // -Q swaps y+x and y-x and negates x·y
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
	if !neg {
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
