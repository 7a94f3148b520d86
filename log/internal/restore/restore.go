// Package restore is the restore guard of a Docket log whose storage is a
// database (and an object store) that an operator can restore from an
// older copy: a local record of the largest checkpoint this writer has
// seen published, and a refusal to write once the storage holds fewer
// entries. Writing to a restored tree would fork the log, and witnesses
// that cosigned the larger tree would refuse it forever.
package restore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/docketlog/docket/internal/durable"
)

// ErrStaleTree is the guard's error: the storage's tree is smaller than a
// checkpoint that was published from it.
var ErrStaleTree = errors.New("the log's tree is smaller than a checkpoint it has published")

// A Guard records, in a local file, the size of the largest checkpoint
// published from the storage that this writer has seen, and refuses
// writes once the storage's tree or checkpoint is smaller. Its methods
// are safe for concurrent use.
type Guard struct {
	path   string
	hint   string // how to recover, for messages
	logger *slog.Logger

	// mu guards high, last and stale.
	mu    sync.Mutex
	high  uint64
	last  []byte // the last checkpoint seen
	stale error
}

// Load reads the record at path (none yet: 0). An empty path disables
// the guard: Check passes and Saw records nothing. hint says, in the
// guard's errors, how to recover the missing entries.
func Load(path, hint string, logger *slog.Logger) (*Guard, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Guard{path: path, hint: hint, logger: logger}
	if path == "" {
		return g, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return g, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore guard: %w", err)
	}
	if g.high, err = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err != nil {
		return nil, fmt.Errorf("restore guard: %s: %w", path, err)
	}
	return g, nil
}

// High returns the largest published size recorded.
func (g *Guard) High() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.high
}

// Check returns an error wrapping ErrStaleTree if size, the number of
// entries that what ("the database") holds, is less than the recorded
// size.
func (g *Guard) Check(what string, size uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.check(what, size)
}

func (g *Guard) check(what string, size uint64) error {
	if size >= g.high {
		return nil
	}
	return fmt.Errorf("%w: %s holds %d entries, but this docket-log saw a checkpoint of %d entries published (recorded in %s). "+
		"It was restored from an older copy; writing to it would fork the log, and witnesses that cosigned the larger tree would refuse it forever. "+
		"%s and start again. Remove %s only if the larger checkpoint never left this machine",
		ErrStaleTree, what, size, g.high, g.path, g.hint, g.path)
}

// Witnessed returns an error wrapping ErrStaleTree if size, the number of
// entries that what holds, is less than cosigned, the largest size that
// witness by has cosigned.
func (g *Guard) Witnessed(what string, size, cosigned uint64, by string) error {
	if size >= cosigned {
		return nil
	}
	return fmt.Errorf("%w: %s holds %d entries, but witness %s has cosigned a checkpoint of this log with %d. "+
		"It was restored from an older copy; writing to it would fork the log, and the witness would refuse it forever. "+
		"%s and start again",
		ErrStaleTree, what, size, by, cosigned, g.hint)
}

// Tripped returns the error that stopped writes, if a checkpoint smaller
// than the recorded one was seen.
func (g *Guard) Tripped() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stale
}

// Saw records checkpoint raw (its size is its second line): it raises
// the recorded size, durably, or trips the guard if raw is smaller.
func (g *Guard) Saw(raw []byte) {
	if g.path == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if bytes.Equal(raw, g.last) {
		return
	}
	g.last = bytes.Clone(raw)
	size, err := Size(raw)
	if err != nil {
		return
	}
	if err := g.check("the published checkpoint", size); err != nil {
		if g.stale == nil {
			g.logger.Error("refusing to write", "err", err)
		}
		g.stale = err
		return
	}
	if size == g.high {
		return
	}
	if err := durable.WriteFile(g.path, []byte(strconv.FormatUint(size, 10)+"\n"), 0o600); err != nil {
		g.logger.Error("restore guard: recording the published size", "err", err)
		return
	}
	g.high = size
}

// Size returns the tree size of checkpoint raw, its second line, without
// checking its signature.
func Size(raw []byte) (uint64, error) {
	lines := bytes.SplitN(raw, []byte("\n"), 3)
	if len(lines) < 3 {
		return 0, errors.New("not a checkpoint")
	}
	size, err := strconv.ParseUint(string(lines[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a checkpoint: size %q", lines[1])
	}
	return size, nil
}
