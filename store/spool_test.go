package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newSpoolStore returns a store whose fallback spool is under a temporary
// state directory.
func newSpoolStore(t *testing.T) *Store {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	return Open(t.TempDir())
}

func TestSpoolFallback(t *testing.T) {
	s := newSpoolStore(t)
	if !strings.HasPrefix(s.FallbackSpoolDir(), os.Getenv("XDG_STATE_HOME")) {
		t.Fatalf("FallbackSpoolDir = %s, want it under $XDG_STATE_HOME", s.FallbackSpoolDir())
	}
	if other := Open(s.project + "-other"); other.FallbackSpoolDir() == s.FallbackSpoolDir() {
		t.Fatal("two projects share a fallback spool")
	}
	where, err := s.Spool("claude", "post", []byte(`{"n":1}`))
	if err != nil || where != filepath.Join(DirName, SpoolDir, filepath.Base(where)) {
		t.Fatalf("Spool = %q, %v; want it in the project spool", where, err)
	}
	// The project spool cannot be written (here: a file where its
	// directory should be): the fallback takes the event.
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.spoolDir(), s.spoolDir()+".saved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.spoolDir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	where, err = s.Spool("claude", "session-end", []byte(`{"n":2}`))
	if err != nil || !strings.HasPrefix(where, s.FallbackSpoolDir()) {
		t.Fatalf("Spool with the project spool broken = %q, %v; want the fallback", where, err)
	}
	os.Remove(s.spoolDir())
	if err := os.Rename(s.spoolDir()+".saved", s.spoolDir()); err != nil {
		t.Fatal(err)
	}
	if paths, err := s.Spooled(); err != nil || len(paths) != 2 {
		t.Fatalf("Spooled = %v, %v; want both events", paths, err)
	}

	// Both spools drain, in arrival order.
	var got []string
	n, err := s.DrainSpool(-1, func(ev SpooledEvent) error {
		got = append(got, fmt.Sprintf("%s %s %s", ev.Agent, ev.Kind, ev.Data))
		return nil
	})
	if err != nil || n != 2 || strings.Join(got, "; ") != `claude post {"n":1}; claude session-end {"n":2}` {
		t.Fatalf("DrainSpool = %d, %v, receipted %q; want both, oldest first", n, err, got)
	}
	if paths, _ := s.Spooled(); len(paths) != 0 {
		t.Fatalf("after draining, %d events are left", len(paths))
	}
	if fi, err := os.Stat(filepath.Join(s.spoolDir(), reserveFile)); err != nil || fi.Size() != ReserveSize {
		t.Fatalf("reserve after a drain: %v, %v; want %d bytes", fi, err, ReserveSize)
	}
}

func TestDrainSpoolOutcomes(t *testing.T) {
	s := newSpoolStore(t)
	for _, kind := range []string{"skip", "reject", "fail", "ok"} {
		if _, err := s.Spool("claude", kind, []byte(kind)); err != nil {
			t.Fatal(err)
		}
	}
	receipt := func(ev SpooledEvent) error {
		switch ev.Kind {
		case "skip":
			return ErrSpoolSkip
		case "reject":
			return fmt.Errorf("%w: bad input", ErrSpoolReject)
		case "fail":
			return errors.New("no key")
		}
		return nil
	}
	n, err := s.DrainSpool(-1, receipt)
	if n != 0 || err == nil || err.Error() != "no key" {
		t.Fatalf("DrainSpool = %d, %v; want 0 and the failure, stopping there", n, err)
	}
	rejected, _ := filepath.Glob(filepath.Join(s.spoolDir(), "*.rejected"))
	if paths, _ := s.Spooled(); len(paths) != 3 || len(rejected) != 1 {
		t.Fatalf("after the drain: %d events, %d rejected; want skip, fail, ok left and one rejected", len(paths), len(rejected))
	}
	// At most max events per drain.
	n, err = s.DrainSpool(0, func(SpooledEvent) error { return nil })
	if n != 0 || err != nil {
		t.Fatalf("DrainSpool(0) = %d, %v; want nothing done", n, err)
	}
}

// A spool another process is draining is left alone.
func TestDrainSpoolLocked(t *testing.T) {
	s := newSpoolStore(t)
	if _, err := s.Spool("claude", "post", []byte("x")); err != nil {
		t.Fatal(err)
	}
	unlock, ok := tryLockDir(s.spoolDir())
	if !ok {
		t.Fatal("cannot lock the spool")
	}
	defer unlock()
	n, err := s.DrainSpool(-1, func(SpooledEvent) error { t.Error("drained a locked spool"); return nil })
	if n != 0 || err != nil {
		t.Fatalf("DrainSpool of a locked spool = %d, %v; want 0, nil", n, err)
	}
}

// When neither spool can be written, Spool says why for both.
func TestSpoolNowhere(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, nil, 0o600); err != nil { // a file: no directory below it
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", state)
	s := Open(t.TempDir())
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.spoolDir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	where, err := s.Spool("claude", "post", []byte("x"))
	if err == nil || strings.Count(err.Error(), "not a directory") != 2 {
		t.Fatalf("Spool with both spools broken = %q, %v; want an error naming both causes", where, err)
	}
}
