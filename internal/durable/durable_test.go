package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "settings.json")
	for _, tt := range []struct {
		data string
		perm os.FileMode
	}{{"first", 0o644}, {"second, longer", 0o600}} {
		if err := WriteFile(path, []byte(tt.data), tt.perm); err != nil {
			t.Fatalf("WriteFile(%q) = %v", tt.data, err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tt.data {
			t.Fatalf("after WriteFile(%q): %q, %v", tt.data, got, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != tt.perm {
			t.Fatalf("mode = %v, want %v", fi.Mode().Perm(), tt.perm)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d files after two writes, want 1 (no temporary files left)", len(ents))
	}
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "event.json")
	if err := Create(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Create(path, []byte("y"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "x" {
		t.Fatalf("content %q, want the first write", got)
	}
	if err := Create(filepath.Join(t.TempDir(), "missing", "e.json"), nil, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Create in a missing directory: %v, want ErrNotExist", err)
	}
}

// flock locks belong to open files, so two opens of one path in this
// process contend like two processes do.
func TestLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b, c := open(), open(), open()
	if err := RLock(a); err != nil {
		t.Fatal(err)
	}
	if ok, err := TryRLock(b); !ok || err != nil {
		t.Fatalf("TryRLock beside a shared lock = %v, %v; want true", ok, err)
	}
	if ok, err := TryLock(c); ok || err != nil {
		t.Fatalf("TryLock beside shared locks = %v, %v; want false", ok, err)
	}
	a.Close()
	b.Close()
	if ok, err := TryLock(c); !ok || err != nil {
		t.Fatalf("TryLock once the others closed = %v, %v; want true", ok, err)
	}
	d := open()
	if ok, err := TryRLock(d); ok || err != nil {
		t.Fatalf("TryRLock beside an exclusive lock = %v, %v; want false", ok, err)
	}
	c.Close()
	if err := Lock(d); err != nil {
		t.Fatal(err)
	}
}
