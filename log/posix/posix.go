// Package posix is the storage of a Docket log on one machine's file
// system: Tessera's POSIX driver (github.com/transparency-dev/tessera/storage/posix),
// a strict dedup index in SQLite beside it, and a lock that keeps a second
// process out of the directory. Open returns all three for log.Config.
package posix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/transparency-dev/tessera"
	tposix "github.com/transparency-dev/tessera/storage/posix"

	"github.com/docketlog/docket/internal/durable"
)

// StateDir is the directory, under a storage directory, of Docket's own
// files: the dedup index, the lock and (by default) the log key.
const StateDir = ".docket-log"

// Storage is an opened storage directory. Only one Storage, in any
// process, holds a directory at a time.
type Storage struct {
	// Driver is Tessera's POSIX driver over the directory.
	Driver tessera.Driver
	// Index is the dedup index in StateDir/dedup.sqlite.
	Index *Index

	dir    string
	logger *slog.Logger
	lock   *os.File

	// probeMu guards wroteAt and writeErr: when Probe last wrote its file,
	// and how that went.
	probeMu  sync.Mutex
	wroteAt  time.Time
	writeErr error
}

// Open locks dir (creating it if needed), removes the temporary files a
// failed Tessera write left in its tile tree, and opens the Tessera driver
// and the dedup index. httpClient is what the driver uses to reach
// witnesses (nil: http.DefaultClient). Close releases it all.
func Open(ctx context.Context, dir string, httpClient *http.Client, logger *slog.Logger) (*Storage, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	state := filepath.Join(dir, StateDir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	s := &Storage{dir: dir, logger: logger}
	var err error
	if s.lock, err = lockFile(filepath.Join(state, "lock")); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	os.Remove(filepath.Join(state, probeFile))
	n, err := removeTemporaryFiles(dir, 0)
	if err != nil {
		return nil, fmt.Errorf("removing temporary files: %w", err)
	}
	if n > 0 {
		logger.Warn("removed temporary files left by failed writes", "files", n)
	}
	if s.Driver, err = tposix.New(ctx, tposix.Config{Path: dir, HTTPClient: httpClient}); err != nil {
		return nil, fmt.Errorf("tessera storage: %w", err)
	}
	if s.Index, err = OpenIndex(ctx, filepath.Join(state, "dedup.sqlite")); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// Close closes the index and releases the directory. The log using the
// storage must be closed first.
func (s *Storage) Close() error {
	var err error
	if s.Index != nil {
		err = s.Index.Close()
	}
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
	}
	return err
}

// lockFile takes an exclusive, non-blocking lock on path.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if ok, err := durable.TryLock(f); !ok {
		f.Close()
		if err == nil {
			err = errors.New("locked")
		}
		return nil, fmt.Errorf("storage directory is in use by another docket-log (%s): %w", path, err)
	}
	return f, nil
}

// MinFree is the free space on the storage's file system below which
// Probe fails: room for a few batches of tiles and entry bundles.
const MinFree = 1 << 20

// probeFile is the file, in StateDir, that Probe writes and removes.
const probeFile = "probe"

// Probe reports whether the storage can take a write now: its file system
// has MinFree bytes and some inodes free for this process (statfs, on
// every call), and a 4 KiB file is written, synced and removed in StateDir
// (at most once a second: calls in between answer as the last write
// went). Its errors name no file. It is safe for concurrent use.
func (s *Storage) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return fmt.Errorf("statfs: %w", errnoOf(err))
	}
	avail := uint64(st.Bavail)
	if os.Geteuid() == 0 {
		avail = uint64(st.Bfree) // the blocks reserved for root are ours too
	}
	if free := avail * uint64(st.Bsize); free < MinFree {
		return fmt.Errorf("%d bytes free on the storage's file system, under %d", free, MinFree)
	}
	if st.Files > 0 && st.Ffree == 0 {
		return errors.New("no inode free on the storage's file system")
	}
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if time.Since(s.wroteAt) >= time.Second {
		s.writeErr, s.wroteAt = s.writeProbe(), time.Now()
	}
	return s.writeErr
}

// writeProbe writes, syncs and removes probeFile.
func (s *Storage) writeProbe() error {
	p := filepath.Join(s.dir, StateDir, probeFile)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("creating a file: %w", errnoOf(err))
	}
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close(), os.Remove(p)); err != nil {
		return fmt.Errorf("writing a file: %w", errnoOf(err))
	}
	return nil
}

// errnoOf returns the system error under err, without the file name.
func errnoOf(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// Cleanup removes the temporary files that failed Tessera writes (a full
// disk) left in the storage: those of the tile tree and of the tree state,
// which only sequencing writes, whatever their age, so it must be called
// while no batch is being sequenced (the log calls it between batches);
// and those of the checkpoint and of the other state files, which Tessera
// may be writing now, once they are 5 seconds old (a temporary lives for
// one synced write; were one removed while in use, that publication would
// fail and be tried again).
func (s *Storage) Cleanup() error {
	n, err := removeTemporaryFiles(s.dir, 5*time.Second)
	if n > 0 {
		s.logger.Warn("removed temporary files left by failed writes", "files", n)
	}
	return err
}

// removeTemporaryFiles removes what Tessera's POSIX driver leaves when a
// write fails half way (a full disk): it writes each file as the final
// name followed by a random decimal number, then renames it, but does not
// remove that file when the write fails. In the tile tree a final name is
// "NNN" (three digits) in an "xNNN" or "tile/L" directory, and a partial
// width (1 to 255) in an "NNN.p" directory; any other regular file is
// such a temporary. In Tessera's state directory, the tree state's
// temporaries are "treeState" and digits. These are removed whatever
// their age: no sequencing may be under way. The checkpoint's
// temporaries ("checkpoint" and digits, at the top) and those of the other
// state files ("gcState", "version") are removed if they were last written
// at least minAge ago.
func removeTemporaryFiles(dir string, minAge time.Duration) (int, error) {
	n := 0
	remove := func(p string) error {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		n++
		return nil
	}
	err := filepath.WalkDir(filepath.Join(dir, "tile"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (Tessera's garbage collector)
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if !isTileName(filepath.Base(filepath.Dir(p)), d.Name()) {
			return remove(p)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	for sub, prefixes := range map[string][]string{"": {"checkpoint"}, tesseraStateDir: {"treeState", "gcState", "version"}} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		for _, d := range entries {
			prefix, ok := temporaryOf(d.Name(), prefixes)
			if !ok || !d.Type().IsRegular() {
				continue
			}
			if prefix != "treeState" {
				info, err := d.Info()
				if err != nil || time.Since(info.ModTime()) < minAge {
					continue
				}
			}
			if err := remove(filepath.Join(dir, sub, d.Name())); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// tesseraStateDir is Tessera's directory of private state in the storage.
const tesseraStateDir = ".state"

// temporaryOf returns the prefix of which name is a temporary: the prefix
// followed by digits.
func temporaryOf(name string, prefixes []string) (string, bool) {
	for _, p := range prefixes {
		if rest, ok := strings.CutPrefix(name, p); ok && isDigits(rest) {
			return p, true
		}
	}
	return "", false
}

// isTileName reports whether name, in directory parent, is a file Tessera
// writes under its final name.
func isTileName(parent, name string) bool {
	if strings.HasSuffix(parent, ".p") {
		w, err := strconv.Atoi(name)
		return err == nil && w >= 1 && w <= 255 && strconv.Itoa(w) == name
	}
	return len(name) == 3 && isDigits(name)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
