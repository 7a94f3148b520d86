package logtest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// FillDisk fills the file system of dir with a file, written until the
// file system answers ENOSPC, and returns its path: removing it frees the
// space again.
func FillDisk(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			t.Fatal(err)
		}
	}
	// Down to the last block.
	for n := len(chunk) / 2; n > 0; n /= 2 {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	return p
}
