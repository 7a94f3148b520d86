package log

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

func removeIfExists(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
}
