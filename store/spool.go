package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/docketlog/docket/internal/durable"
)

// The spool keeps the hook events that could not be receipted (DESIGN §5:
// post events are never lost) until a later hook or `docket sync` receipts
// them. It has two locations: .docket/spool in the project, and a fallback
// in the user's state directory (see [Store.FallbackSpoolDir]) for when the
// project's .docket cannot be written (full or read-only). Each event is one
// file, named <unix ns>-<pid>.<agent>.<kind>.json and holding the event as
// the agent sent it, so the events drain in arrival order.
//
// The project spool keeps a reserve file of ReserveSize bytes: when the file
// system is full, the reserve is removed to make room for the event, and
// created again by the next drain.

// ReserveSize is the size of the spool's reserve file: one event of the
// largest size a hook accepts.
const ReserveSize = 1 << 20

// Names inside a spool directory.
const (
	reserveFile   = ".reserve"
	spoolLockFile = ".lock" // locked by whoever drains the spool
)

// Errors a drain callback returns to say what becomes of a spooled event.
var (
	// ErrSpoolSkip leaves the event in the spool and goes on with the next.
	ErrSpoolSkip = errors.New("spooled event left for later")
	// ErrSpoolReject renames the event *.rejected, for a human to look at:
	// it can never be receipted. Wrap it.
	ErrSpoolReject = errors.New("spooled event cannot be receipted")
)

// SpooledEvent is one event waiting in a spool.
type SpooledEvent struct {
	Agent, Kind string // as given to Spool
	Data        []byte // the event as the agent sent it
	Path        string
}

// FallbackSpoolDir returns the spool used when the project's .docket cannot
// be written: $XDG_STATE_HOME/docket/spool/<project hash>, or
// ~/.local/state/docket/spool/<project hash> when XDG_STATE_HOME is unset,
// where the hash is of the absolute project root. It returns "" when
// neither directory can be named.
func (s *Store) FallbackSpoolDir() string {
	state := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		state = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(s.project))
	return filepath.Join(state, "docket", "spool", hex.EncodeToString(sum[:8]))
}

// spoolDirs returns the spool locations, the project's first.
func (s *Store) spoolDirs() []string {
	dirs := []string{s.spoolDir()}
	if fb := s.FallbackSpoolDir(); fb != "" {
		dirs = append(dirs, fb)
	}
	return dirs
}

// Spool keeps an event that could not be receipted, durably. It tries the
// project's spool, releasing the reserve there when the file system is
// full, then the fallback spool. It returns where the event was kept, or
// why it could be kept nowhere.
func (s *Store) Spool(agent, kind string, data []byte) (string, error) {
	name := fmt.Sprintf("%020d-%d.%s.%s.json", time.Now().UnixNano(), os.Getpid(), agent, kind)
	var errs []error
	for i, dir := range s.spoolDirs() {
		err := spoolIn(dir, name, data)
		if err != nil && i == 0 && isNoSpace(err) && os.Remove(filepath.Join(dir, reserveFile)) == nil {
			err = spoolIn(dir, name, data)
		}
		if err == nil {
			if i == 0 {
				return filepath.Join(DirName, SpoolDir, name), nil
			}
			return filepath.Join(dir, name), nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

func spoolIn(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return durable.Create(filepath.Join(dir, name), data, 0o600)
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Spooled returns the paths of the events waiting in both spools.
func (s *Store) Spooled() ([]string, error) {
	var paths []string
	for _, dir := range s.spoolDirs() {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				paths = append(paths, filepath.Join(dir, e.Name()))
			}
		}
	}
	return paths, nil
}

// DrainSpool hands the spooled events of both spools to receipt, oldest
// first and at most max of them (all when max < 0), and removes each one
// receipt returns nil for. An error wrapping ErrSpoolReject renames the
// event *.rejected; ErrSpoolSkip leaves it; any other error stops the
// drain. It returns how many events were receipted.
//
// One process drains a spool at a time, under its lock file: two drainers
// would receipt an event twice, and the second execution receipt, finding
// its decision consumed, would be unlinked. A spool another process is
// draining, or that cannot be locked (read-only), is left alone. Draining
// also puts the project spool's reserve back when it is missing.
func (s *Store) DrainSpool(max int, receipt func(SpooledEvent) error) (int, error) {
	var events []SpooledEvent
	for i, dir := range s.spoolDirs() {
		ents, err := os.ReadDir(dir)
		if i == 0 && (err == nil || errors.Is(err, fs.ErrNotExist)) &&
			!slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == reserveFile }) {
			_ = makeReserve(dir) // best effort: a full disk has no room for it
		}
		if err != nil {
			continue // missing, or unreadable: nothing to drain there
		}
		if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".json") }) {
			continue
		}
		unlock, ok := tryLockDir(dir)
		if !ok {
			continue
		}
		defer unlock()
		// Listed again under the lock: the holder before us may have drained.
		if ents, err = os.ReadDir(dir); err != nil {
			return 0, err
		}
		for _, e := range ents {
			parts := strings.Split(e.Name(), ".")
			if len(parts) == 4 && parts[3] == "json" {
				events = append(events, SpooledEvent{Agent: parts[1], Kind: parts[2], Path: filepath.Join(dir, e.Name())})
			}
		}
	}
	slices.SortFunc(events, func(a, b SpooledEvent) int {
		return strings.Compare(filepath.Base(a.Path), filepath.Base(b.Path))
	})
	n := 0
	for _, ev := range events {
		if n == max {
			break
		}
		data, err := os.ReadFile(ev.Path)
		if err != nil {
			return n, err
		}
		ev.Data = data
		switch err := receipt(ev); {
		case errors.Is(err, ErrSpoolSkip):
			continue
		case errors.Is(err, ErrSpoolReject):
			os.Rename(ev.Path, strings.TrimSuffix(ev.Path, ".json")+".rejected")
			continue
		case err != nil:
			return n, err
		}
		if err := os.Remove(ev.Path); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// tryLockDir takes a spool's drain lock if no one else holds it.
func tryLockDir(dir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, spoolLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false
	}
	if ok, _ := durable.TryLock(f); !ok {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

// makeReserve writes the spool's reserve file: ReserveSize bytes that the
// file system really allocates (not a sparse file).
func makeReserve(dir string) error {
	return durable.WriteFile(filepath.Join(dir, reserveFile), make([]byte, ReserveSize), 0o600)
}
