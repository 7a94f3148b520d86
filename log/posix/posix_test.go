package posix_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/logtest"
	"github.com/docketlog/docket/log/posix"
)

func TestIndexContract(t *testing.T) {
	logtest.TestIndex(t, func(t *testing.T) (log.Index, func() log.Index) {
		path := filepath.Join(t.TempDir(), "dedup.sqlite")
		open := func() *posix.Index {
			x, err := posix.OpenIndex(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			return x
		}
		x := open()
		return x, func() log.Index {
			x.Close()
			return open()
		}
	})
}

// TestOpenRemovesTemporaryFiles checks that Open removes what a failed
// Tessera write leaves (the final name followed by random digits) and
// keeps every file under its final name.
func TestOpenRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"tile/0/000", "tile/0/x001/234", "tile/0/000.p/5", "tile/entries/000.p/255", "tile/1/000.p/17", "checkpoint"}
	gone := []string{"tile/0/0001234567", "tile/0/x001/2341804289383", "tile/0/000.p/5846930886", "tile/entries/000.p/2551681692777", "tile/1/000.p/0", "checkpoint1714636915"}
	for _, p := range append(keep, gone...) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := posix.Open(t.Context(), dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, p := range keep {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("after Open, %s: %v, want kept", p, err)
		}
	}
	for _, p := range gone {
		if _, err := os.Stat(filepath.Join(dir, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Open, %s: %v, want removed", p, err)
		}
	}
	// A second Open of the directory is refused while the first holds it.
	if st2, err := posix.Open(t.Context(), dir, nil, nil); err == nil {
		st2.Close()
		t.Errorf("second Open of a held directory = nil error, want refusal")
	}
}
