package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"testing"

	"filippo.io/edwards25519"
)

// checkSame fails unless the table verification and crypto/ed25519 agree on
// (pub, msg, sig), and returns their answer.
func checkSame(t testing.TB, pub, msg, sig []byte) bool {
	t.Helper()
	want := false // crypto/ed25519 panics on a key of the wrong length
	if len(pub) == ed25519.PublicKeySize {
		want = ed25519.Verify(pub, msg, sig)
	}
	got := false
	if A, err := new(edwards25519.Point).SetBytes(pub); err == nil && len(pub) == 32 {
		got = verifyWith(newMultiples(A, keyWindow), pub, msg, sig)
	}
	if got != want {
		t.Fatalf("verifyWith(%x, %q, %x) = %v, crypto/ed25519 says %v", pub, msg, sig, got, want)
	}
	// And through the cache, past the point where the key gets a table.
	for range tableAfter + 2 {
		if got := verifyEd25519(pub, msg, sig); got != want {
			t.Fatalf("verifyEd25519(%x, %q, %x) = %v, crypto/ed25519 says %v", pub, msg, sig, got, want)
		}
	}
	return want
}

func TestVerifyEd25519Valid(t *testing.T) {
	for i := range 200 {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		msg := []byte(fmt.Sprintf("message %d", i))
		if !checkSame(t, pub, msg, ed25519.Sign(priv, msg)) {
			t.Fatal("a valid signature did not verify")
		}
	}
	// RFC 8032 test 1.
	pub, _ := hex.DecodeString("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	sig, _ := hex.DecodeString("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
	if !checkSame(t, pub, nil, sig) {
		t.Fatal("RFC 8032 test 1 did not verify")
	}
}

func TestVerifyEd25519Mutated(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := []byte("the receipt")
	sig := ed25519.Sign(priv, msg)
	for i := range len(sig) * 8 {
		s := bytes.Clone(sig)
		s[i/8] ^= 1 << (i % 8)
		if checkSame(t, pub, msg, s) {
			t.Fatalf("signature with bit %d flipped verified", i)
		}
		m := bytes.Clone(msg)
		m[i%len(m)] ^= 1 << (i % 8)
		if checkSame(t, pub, m, sig) {
			t.Fatalf("message with a bit flipped verified")
		}
	}
	for i := range len(pub) * 8 {
		p := bytes.Clone(pub)
		p[i/8] ^= 1 << (i % 8)
		checkSame(t, p, msg, sig)
	}
	// S = L and S + L: not canonical, so invalid.
	L, _ := hex.DecodeString("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")
	s := append(bytes.Clone(sig[:32]), L...)
	if checkSame(t, pub, msg, s) {
		t.Fatal("S = L verified")
	}
	checkSame(t, pub, msg, sig[:63])
	checkSame(t, pub[:31], msg, sig)
}

// torsion returns a point of order 8.
func torsion(t testing.TB) *edwards25519.Point {
	inv8, err := edwards25519.NewScalar().SetCanonicalBytes(append([]byte{8}, make([]byte, 31)...))
	if err != nil {
		t.Fatal(err)
	}
	inv8.Invert(inv8)
	id := edwards25519.NewIdentityPoint()
	for {
		var b [32]byte
		rand.Read(b[:])
		P, err := new(edwards25519.Point).SetBytes(b[:])
		if err != nil {
			continue
		}
		// P = P_L + T with P_L = [1/8]([8]P) in the prime-order subgroup.
		PL := new(edwards25519.Point).ScalarMult(inv8, new(edwards25519.Point).MultByCofactor(P))
		T := new(edwards25519.Point).Subtract(P, PL)
		T4 := new(edwards25519.Point).Add(T, T)
		T4.Add(T4, T4)
		if T4.Equal(id) == 0 {
			return T
		}
	}
}

// TestVerifyEd25519Adversarial covers the inputs where verification
// equations differ between implementations (small-order keys, torsion in A
// or R): the table must agree with crypto/ed25519 on each.
func TestVerifyEd25519Adversarial(t *testing.T) {
	T := torsion(t)
	hram := func(R, A, M []byte) *edwards25519.Scalar {
		h := sha512.New()
		h.Write(R)
		h.Write(A)
		h.Write(M)
		k, _ := edwards25519.NewScalar().SetUniformBytes(h.Sum(nil))
		return k
	}
	random := func() *edwards25519.Scalar {
		var b [64]byte
		rand.Read(b[:])
		s, _ := edwards25519.NewScalar().SetUniformBytes(b[:])
		return s
	}
	B := edwards25519.NewGeneratorPoint()
	accepted, rejected := 0, 0
	for i := range 64 {
		a, r := random(), random()
		msg := []byte(fmt.Sprintf("m%d", i))
		A := new(edwards25519.Point).ScalarBaseMult(a)

		// A with a torsion component: valid for crypto/ed25519 exactly
		// when [k]T vanishes.
		At := new(edwards25519.Point).Add(A, T).Bytes()
		R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
		k := hram(R, At, msg)
		S := edwards25519.NewScalar().MultiplyAdd(k, a, r)
		if checkSame(t, At, msg, append(R, S.Bytes()...)) {
			accepted++
		} else {
			rejected++
		}

		// R with a torsion component: never valid cofactorless.
		Rt := new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(r), T).Bytes()
		k = hram(Rt, A.Bytes(), msg)
		S = edwards25519.NewScalar().MultiplyAdd(k, a, r)
		if checkSame(t, A.Bytes(), msg, append(Rt, S.Bytes()...)) {
			t.Fatal("a signature whose R has a torsion component verified")
		}

		// Small-order keys: the identity key accepts R = [S]B for any message.
		for _, P := range []*edwards25519.Point{edwards25519.NewIdentityPoint(), T} {
			s := random()
			R := new(edwards25519.Point).ScalarMult(s, B).Bytes()
			checkSame(t, P.Bytes(), msg, append(R, s.Bytes()...))
		}
	}
	if accepted == 0 || rejected == 0 {
		t.Fatalf("keys with torsion: %d accepted, %d rejected; want some of each", accepted, rejected)
	}
	// Non-canonical encodings of y (y ≥ p) for the key.
	for _, h := range []string{
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"0100000000000000000000000000000000000000000000000000000000000080",
	} {
		pub, _ := hex.DecodeString(h)
		s := random()
		R := new(edwards25519.Point).ScalarMult(s, B).Bytes()
		checkSame(t, pub, []byte("x"), append(R, s.Bytes()...))
	}
}

func TestDigits(t *testing.T) {
	for _, w := range []uint{4, 5, 6, 8} {
		t.Run(fmt.Sprintf("w=%d", w), func(t *testing.T) {
			two, _ := edwards25519.NewScalar().SetCanonicalBytes(append([]byte{2}, make([]byte, 31)...))
			radix := edwards25519.NewScalar().Set(two) // 2^w
			for range w - 1 {
				radix.Multiply(radix, two)
			}
			for range 1000 {
				var b [64]byte
				rand.Read(b[:])
				s, _ := edwards25519.NewScalar().SetUniformBytes(b[:])
				var d [64]int32
				n := digits(s.Bytes(), w, &d)
				// Σ d[i]·2^(w·i), computed with scalars, must give s back.
				sum := edwards25519.NewScalar()
				pow := edwards25519.NewScalar()
				pow.SetCanonicalBytes(append([]byte{1}, make([]byte, 31)...))
				for i := range n {
					if half := int32(1) << (w - 1); d[i] < -half || d[i] > half {
						t.Fatalf("digit %d = %d, out of range", i, d[i])
					}
					v := make([]byte, 32)
					v[0], v[1] = byte(abs32(d[i])), byte(abs32(d[i])>>8)
					x, _ := edwards25519.NewScalar().SetCanonicalBytes(v)
					x.Multiply(x, pow)
					if d[i] < 0 {
						sum.Subtract(sum, x)
					} else {
						sum.Add(sum, x)
					}
					pow.Multiply(pow, radix)
				}
				if sum.Equal(s) != 1 {
					t.Fatalf("digits(%x, %d) do not sum to it", s.Bytes(), w)
				}
			}
		})
	}
}

func abs32(d int32) int32 {
	if d < 0 {
		return -d
	}
	return d
}

func FuzzVerifyEd25519(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	f.Add([]byte(pub), []byte("m"), ed25519.Sign(priv, []byte("m")))
	f.Add([]byte(pub), []byte("m"), make([]byte, 64))
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		checkSame(t, pub, msg, sig)
	})
}

func BenchmarkVerifyEd25519(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := bytes.Repeat([]byte("r"), 600)
	sig := ed25519.Sign(priv, msg)
	b.Run("crypto", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			if !verifyEd25519(pub, msg, sig) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("build", func(b *testing.B) {
		A, _ := new(edwards25519.Point).SetBytes(pub)
		for b.Loop() {
			newMultiples(A, keyWindow)
		}
	})
}

// TestVerifyEd25519CacheBounds verifies with more keys than the cache keeps
// tables for, and more than it keeps at all: every answer stays right and
// the cache stays within its bounds.
func TestVerifyEd25519CacheBounds(t *testing.T) {
	msg := []byte("bounded")
	for i := range 4*maxTables + 10 {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		sig := ed25519.Sign(priv, msg)
		bad := bytes.Clone(sig)
		bad[0] ^= 1
		for range tableAfter + 1 {
			if !verifyEd25519(pub, msg, sig) {
				t.Fatalf("key %d: a valid signature did not verify", i)
			}
		}
		if verifyEd25519(pub, msg, bad) {
			t.Fatalf("key %d: a bad signature verified", i)
		}
		keyCache.Lock()
		n, tables := len(keyCache.m), keyCache.tables.Load()
		keyCache.Unlock()
		if n > 4*maxTables || tables > maxTables+1 {
			t.Fatalf("after %d keys the cache holds %d keys and %d tables", i+1, n, tables)
		}
	}
}

// BenchmarkVerifyEd25519Keys verifies with 20 keys in turn, as a log of
// 20 issuers is read: the tables compete for the caches.
func BenchmarkVerifyEd25519Keys(b *testing.B) {
	type signed struct{ pub, msg, sig []byte }
	var s []signed
	for range 20 {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		msg := bytes.Repeat([]byte("r"), 600)
		s = append(s, signed{pub, msg, ed25519.Sign(priv, msg)})
	}
	i := 0
	for b.Loop() {
		e := &s[i%len(s)]
		if !verifyEd25519(e.pub, e.msg, e.sig) {
			b.Fatal("invalid")
		}
		i++
	}
}
