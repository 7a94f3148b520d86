package c2sp

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

func TestNewCosigner(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "witness.example/w")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		skey    string
		wantErr bool
	}{
		{"ed25519 key", skey, false},
		{"trailing newline", skey + "\n", false},
		{"empty", "", true},
		{"vkey", vkey, true},
		{"truncated", skey[:len(skey)-4], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, cvkey, err := NewCosigner(tt.skey)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewCosigner() error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			// The vkey is what formats/note derives from the plain Ed25519 vkey.
			want, err := CosignatureVKey(vkey)
			if err != nil {
				t.Fatal(err)
			}
			if cvkey != want {
				t.Errorf("NewCosigner() vkey = %q, want %q", cvkey, want)
			}
			if s.Name() != "witness.example/w" {
				t.Errorf("NewCosigner() name = %q", s.Name())
			}
		})
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "log.key")
	vkey, err := GenerateKeyFile(path, "example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if pub, _ := os.ReadFile(path + ".pub"); string(pub) != vkey+"\n" {
		t.Errorf("%s.pub = %q, want %q", path, pub, vkey+"\n")
	}
	s, got, err := LoadSigner(path)
	if err != nil || got != vkey || s.Name() != "example.com/log" {
		t.Fatalf("LoadSigner = %v, %q, %v; want example.com/log, %q", s, got, err, vkey)
	}
	// What the signer signs, the verifier key verifies.
	signed, err := note.Sign(&note.Note{Text: "hello\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		t.Errorf("note.Open(signed by LoadSigner's key) = %v", err)
	}
	if _, err := GenerateKeyFile(path, "example.com/log"); err == nil {
		t.Errorf("GenerateKeyFile over an existing key = nil, want an error")
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadSigner(path); !errors.Is(err, receipts.ErrKeyPermissions) {
		t.Errorf("LoadSigner(mode 0640) = %v, want ErrKeyPermissions", err)
	}
	if err := WriteKeyFiles(path, "x", "y"); err == nil {
		t.Errorf("WriteKeyFiles over an existing key = nil, want an error")
	}
}

func TestVerifierKey(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, "example.com/log")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, skey, want string
	}{
		{"ed25519", skey, vkey},
		{"vkey", vkey, ""},
		{"not a key", "PRIVATE+KEY+x+00000000+AAAA", ""},
		{"cosignature type", strings.Replace(skey, "+A", "+B", 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifierKey(tt.skey)
			if got != tt.want || (err == nil) != (tt.want != "") {
				t.Errorf("VerifierKey(%q) = %q, %v; want %q", tt.skey, got, err, tt.want)
			}
		})
	}
}

func TestLogID(t *testing.T) {
	// echo -n example.com/log | sha256sum
	const want = "4d3203c8f35cdf600e475f55fede6081a703d3d322f208865fca2ec4f0e030f8"
	if got := LogID("example.com/log"); got != want {
		t.Errorf("LogID(example.com/log) = %q, want %q", got, want)
	}
}
