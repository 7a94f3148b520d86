package receipts

import (
	"bytes"
	"crypto/rand"
	"math/big"
	"testing"
)

// base58BigInt is the plain definition: the number in base 58, and a '1'
// per leading zero byte.
func base58BigInt(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b)
	mod, radix := new(big.Int), big.NewInt(58)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	out = append(out, bytes.Repeat([]byte{'1'}, zeros)...)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

func TestBase58(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"zero", []byte{0}},
		{"zeros", []byte{0, 0, 0}},
		{"leading zeros", []byte{0, 0, 1, 2, 255}},
		{"one", []byte{1}},
		{"57", []byte{57}},
		{"58", []byte{58}},
		{"all ones", bytes.Repeat([]byte{255}, 32)},
		{"hello", []byte("hello world")},
	}
	for i := range 200 {
		b := make([]byte, 1+i%40)
		rand.Read(b)
		if i%5 == 0 {
			b[0] = 0
		}
		tests = append(tests, struct {
			name string
			in   []byte
		}{"random", b})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := base58(tt.in), base58BigInt(tt.in); got != want {
				t.Errorf("base58(%x) = %q, want %q", tt.in, got, want)
			}
		})
	}
}
