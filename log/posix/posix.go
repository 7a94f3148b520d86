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

	lock *os.File
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
	s := &Storage{}
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
	n, err := removeTemporaryFiles(dir)
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

// removeTemporaryFiles removes what Tessera's POSIX driver leaves when a
// write fails half way (a full disk): it writes each file as the final
// name followed by a random decimal number, then renames it. In the tile
// tree a final name is "NNN" (three digits) in an "xNNN" or "tile/L"
// directory, and a partial width (1 to 255) in an "NNN.p" directory;
// any other regular file is such a temporary. At the top, the
// checkpoint's temporaries are "checkpoint" and digits. It must run while
// no driver writes to dir.
func removeTemporaryFiles(dir string) (int, error) {
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
			return nil
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
	top, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	for _, d := range top {
		if rest, ok := strings.CutPrefix(d.Name(), "checkpoint"); ok && rest != "" && isDigits(rest) && d.Type().IsRegular() {
			if err := remove(filepath.Join(dir, d.Name())); err != nil {
				return n, err
			}
		}
	}
	return n, nil
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
