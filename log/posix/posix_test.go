package posix_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	keep := []string{"tile/0/000", "tile/0/x001/234", "tile/0/000.p/5", "tile/entries/000.p/255", "tile/1/000.p/17", "checkpoint",
		".state/treeState.lock"}
	gone := []string{"tile/0/0001234567", "tile/0/x001/2341804289383", "tile/0/000.p/5846930886", "tile/entries/000.p/2551681692777", "tile/1/000.p/0", "checkpoint1714636915",
		".state/treeState1957747793", ".state/gcState424238335", ".state/version719885386", ".docket-log/probe"}
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

// TestCleanup checks that Cleanup removes the temporaries of the tile tree
// and the tree state whatever their age, and those of the checkpoint and
// the other state files only once they are a few seconds old: Tessera may
// be writing those now.
func TestCleanup(t *testing.T) {
	dir := t.TempDir()
	st, err := posix.Open(t.Context(), dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old := time.Now().Add(-2 * time.Minute)
	tests := []struct {
		path string
		old  bool // last written two minutes ago
		kept bool
	}{
		{"tile/0/000", false, true},
		{"tile/0/0001234567", false, false},
		{"tile/entries/000.p/255846930886", false, false},
		{".state/treeState1957747793", false, false},
		{"checkpoint1714636915", false, true},
		{"checkpoint1714636916", true, false},
		{".state/gcState424238335", false, true},
		{".state/gcState424238336", true, false},
		{"checkpoint", true, true},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if tt.old {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Cleanup(); err != nil {
		t.Fatalf("Cleanup() = %v", err)
	}
	for _, tt := range tests {
		_, err := os.Stat(filepath.Join(dir, tt.path))
		if kept := err == nil; kept != tt.kept {
			t.Errorf("after Cleanup, %s (old %v): %v, want kept %v", tt.path, tt.old, err, tt.kept)
		}
	}
}

// TestProbe checks Probe on a real file system that fills up and is freed:
// a full disk (ENOSPC, under MinFree) fails it, freed space makes it pass
// again, and its errors name no file.
func TestProbe(t *testing.T) {
	dir := logtest.SmallDisk(t, 8<<20)
	st, err := posix.Open(t.Context(), filepath.Join(dir, "log"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Probe(t.Context()); err != nil {
		t.Fatalf("Probe() on an empty disk = %v, want nil", err)
	}
	filler := logtest.FillDisk(t, dir)
	err = st.Probe(t.Context())
	if err == nil {
		t.Fatalf("Probe() on a full disk = nil, want an error")
	}
	if strings.Contains(err.Error(), dir) {
		t.Errorf("Probe() = %v, names a file", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := st.Probe(t.Context()); err != nil {
		t.Errorf("Probe() after the disk was freed = %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "log", posix.StateDir, "probe")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the probe's file after Probe: %v, want removed", err)
	}
}
