package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// TestSignEd25519 checks that signEd25519 is byte-identical to crypto/ed25519
// (RFC 8032 signatures are deterministic) over many keys and messages.
func TestSignEd25519(t *testing.T) {
	msg := make([]byte, 0, 300)
	for i := range 300 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		if got, want := signEd25519(priv, msg), ed25519.Sign(priv, msg); !bytes.Equal(got, want) {
			t.Fatalf("signEd25519(key %d, %d-byte message) = %x, want %x", i, len(msg), got, want)
		}
		k, err := privateKeyFromSeed(priv.Seed(), priv.Public().(ed25519.PublicKey))
		if err != nil || !k.Equal(priv) {
			t.Fatalf("privateKeyFromSeed = %v, want the key", err)
		}
		if _, err := privateKeyFromSeed(priv.Seed(), pub(bystanderKey)); err == nil {
			t.Fatal("privateKeyFromSeed(wrong public key) = nil error")
		}
		msg = append(msg, byte(i))
	}
	// RFC 8032 §7.1 test 1.
	k := ed25519.NewKeyFromSeed(mustHex(t, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
	want := "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
	if got := signEd25519(k, nil); !bytes.Equal(got, mustHex(t, want)) {
		t.Errorf("signEd25519(RFC 8032 test 1) = %x, want %s", got, want)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func BenchmarkSignEd25519Variable(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	for b.Loop() {
		signEd25519(priv, []byte("receipt"))
	}
}

func BenchmarkSignEd25519Std(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	for b.Loop() {
		ed25519.Sign(priv, []byte("receipt"))
	}
}
