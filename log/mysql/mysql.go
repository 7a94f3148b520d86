// Package mysql is the storage of a Docket log in a MySQL or MariaDB
// database: Tessera's MySQL driver (github.com/transparency-dev/tessera/storage/mysql)
// over a schema this package creates or migrates, a strict dedup index in
// the same database that several docket-log processes share (see Index),
// and a guard that refuses to write to a tree that is smaller than a
// checkpoint this writer has seen published (the database was restored
// from an older copy). Open returns them for log.Config.
package mysql

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/transparency-dev/tessera"
	tmysql "github.com/transparency-dev/tessera/storage/mysql"

	"github.com/docketlog/docket/internal/durable"
)

// MinCheckpointInterval is the shortest checkpoint interval Tessera's
// MySQL driver accepts.
const MinCheckpointInterval = time.Second

// PublishSlack is subtracted from the publication time that Tessera's
// MySQL driver records with each checkpoint (a trigger in the schema).
// The driver publishes on a ticker of one checkpoint interval I, and after
// each sequenced batch, but only if I has passed since the recorded time,
// which it takes after signing and witnessing: so the tick after a
// publication always found it "too soon", checkpoints came every second
// interval, and a lone write waited up to 2I. With the slack S, a
// publication is allowed I−S after the previous one: every tick
// publishes, a batch sequenced at least I−S after the last publication is
// published at once, and a lone write waits at most about 2I−S (1.2s at
// the 1s minimum interval), while checkpoints still come at most every
// I−S (200ms, Docket's POSIX default is 100ms). The upstream fix is to
// record the time the round started, or to publish at every tick.
const PublishSlack = 800 * time.Millisecond

// HighWaterFile is the name, in Options.StateDir, of the file that records
// the largest published checkpoint this writer has seen.
const HighWaterFile = "mysql-high-water"

// Options configure Open.
type Options struct {
	// StateDir is a local directory (not in the database) where the
	// restore guard keeps HighWaterFile. Empty disables the guard.
	StateDir string
	// MaxOpenConns bounds the connections of the dedup index, which every
	// request uses (default 64). Tessera's driver has a pool of its own
	// (16 connections), so that sequencing and publication never wait
	// behind requests for a connection.
	MaxOpenConns int
	// Logger receives notable events; nil discards.
	Logger *slog.Logger
	// Cosigned is the largest tree size a witness of the log has cosigned,
	// as docket-log learned from the witnesses at start (0: unknown). A
	// database whose tree is smaller was restored from an older copy, and
	// is refused like one smaller than the recorded high-water mark.
	Cosigned uint64
	// CosignedBy names the witness that cosigned it, for the error.
	CosignedBy string
}

// Storage is an opened database.
type Storage struct {
	// Driver is Tessera's MySQL driver, with the restore guard.
	Driver tessera.Driver
	// Index is the dedup index shared by the database's writers.
	Index *Index
	// DB is the index's connection pool.
	DB *sql.DB
	// tdb is the Tessera driver's.
	tdb *sql.DB

	// probeMu is held while Probe writes, and guards probedAt and
	// probeErr: when it last wrote, and how that went.
	probeMu  sync.Mutex
	probedAt time.Time
	probeErr error
}

// ErrStaleTree is the restore guard's error: the database's tree is
// smaller than a checkpoint that was published from it.
var ErrStaleTree = errors.New("the log's tree is smaller than a checkpoint it has published")

// Open connects to the database named in dsn (go-sql-driver form,
// user:password@tcp(host:3306)/dbname), creates or migrates the schema,
// checks the restore guard and opens the Tessera driver and the index.
// Close releases it all.
func Open(ctx context.Context, dsn string, opts Options) (*Storage, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql dsn: %w", err)
	}
	if cfg.DBName == "" {
		return nil, errors.New("mysql dsn: no database name (user:password@tcp(host:3306)/dbname)")
	}
	n := opts.MaxOpenConns
	if n <= 0 {
		n = 64
	}
	db, err := pool(cfg.FormatDSN(), n)
	if err != nil {
		return nil, err
	}
	tdb, err := pool(cfg.FormatDSN(), 16)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Storage{DB: db, tdb: tdb}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := db.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("mysql schema: %w", err)
	}
	g := &guard{logger: opts.Logger}
	if opts.StateDir != "" {
		g.path = filepath.Join(opts.StateDir, HighWaterFile)
		if err := g.load(); err != nil {
			return nil, err
		}
		var size uint64
		if err := db.QueryRowContext(ctx, "SELECT `size` FROM `TreeState` WHERE `id` = 0").Scan(&size); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("mysql: reading the tree size: %w", err)
		}
		if err := g.check(size); err != nil {
			return nil, err
		}
		if size < opts.Cosigned {
			return nil, fmt.Errorf("%w: the database holds %d entries, but witness %s has cosigned a checkpoint of this log with %d. "+
				"The database was restored from an older copy; writing to it would fork the log, and the witness would refuse it forever. "+
				"Recover the missing entries (binlog point-in-time recovery to the time of the failure; see deploy/mysql.md) and start again",
				ErrStaleTree, size, opts.CosignedBy, opts.Cosigned)
		}
	}
	t, err := tmysql.New(ctx, tdb)
	if err != nil {
		return nil, fmt.Errorf("tessera storage: %w", err)
	}
	s.Driver = &driver{t: t, g: g}
	if s.Index, err = OpenIndex(ctx, db); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// Probe reports whether the database takes a write now: it commits a
// write to the DocketProbe table (a read-only server, a full table space,
// a lost connection or a lock held too long make it fail, within ctx), at
// most once a second; calls in between answer as the last write went. It
// is safe for concurrent use.
func (s *Storage) Probe(ctx context.Context) error {
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	if time.Since(s.probedAt) < time.Second {
		return s.probeErr
	}
	_, err := s.DB.ExecContext(ctx, "REPLACE INTO `DocketProbe` (`id`, `at`) VALUES (0, ?)", time.Now().UnixMilli())
	if err != nil {
		err = fmt.Errorf("mysql: writing the probe: %w", err)
	}
	s.probeErr, s.probedAt = err, time.Now()
	return err
}

// Close closes the index and the connection pool. The log using the
// storage must be closed first.
func (s *Storage) Close() error {
	var err error
	if s.Index != nil {
		err = s.Index.Close()
	}
	return errors.Join(err, s.DB.Close(), s.tdb.Close())
}

func pool(dsn string, n int) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}

// driver is Tessera's MySQL driver with the restore guard around its
// appender and reader.
type driver struct {
	t *tmysql.Storage
	g *guard
}

func (d *driver) Appender(ctx context.Context, opts *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	a, r, err := d.t.Appender(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	add := a.Add
	a.Add = func(ctx context.Context, e *tessera.Entry) tessera.IndexFuture {
		if err := d.g.tripped(); err != nil {
			return func() (tessera.Index, error) { return tessera.Index{}, err }
		}
		return add(ctx, e)
	}
	return a, &reader{LogReader: r, g: d.g}, nil
}

// reader records the size of each published checkpoint it reads, and
// trims partial tiles to the width asked for: Tessera's MySQL driver
// answers a partial tile or bundle with the widest it has, but a tile of
// width W must hold exactly W hashes or entries (c2sp.org/tlog-tiles),
// and it is served as immutable.
type reader struct {
	tessera.LogReader
	g *guard
}

func (r *reader) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	t, err := r.LogReader.ReadTile(ctx, level, index, p)
	if err != nil || p == 0 {
		return t, err
	}
	if n := int(p) * sha256.Size; len(t) > n {
		t = t[:n]
	}
	return t, nil
}

func (r *reader) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	b, err := r.LogReader.ReadEntryBundle(ctx, index, p)
	if err != nil || p == 0 {
		return b, err
	}
	if b, err = trimBundle(b, int(p)); err != nil {
		return nil, fmt.Errorf("entry bundle %d: %w", index, err)
	}
	return b, nil
}

// trimBundle returns the first n entries of an entry bundle, whose entries
// are each a 2-byte big-endian length and that many bytes.
func trimBundle(b []byte, n int) ([]byte, error) {
	off := 0
	for range n {
		if off+2 > len(b) {
			return nil, fmt.Errorf("fewer than %d entries", n)
		}
		off += 2 + int(binary.BigEndian.Uint16(b[off:]))
	}
	if off > len(b) {
		return nil, fmt.Errorf("fewer than %d entries", n)
	}
	return b[:off], nil
}

func (r *reader) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	raw, err := r.LogReader.ReadCheckpoint(ctx)
	if err == nil {
		r.g.saw(raw)
	}
	return raw, err
}

// guard is the restore guard: it keeps, in a local file, the size of the
// largest checkpoint published from the database that this writer has
// seen, and refuses writes once the database's tree or checkpoint is
// smaller.
type guard struct {
	path   string
	logger *slog.Logger

	mu    sync.Mutex
	high  uint64
	last  []byte // the last checkpoint seen
	stale error
}

func (g *guard) load() error {
	b, err := os.ReadFile(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore guard: %w", err)
	}
	if g.high, err = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err != nil {
		return fmt.Errorf("restore guard: %s: %w", g.path, err)
	}
	return nil
}

func (g *guard) check(size uint64) error {
	if size >= g.high {
		return nil
	}
	return fmt.Errorf("%w: the database holds %d entries, but this docket-log saw a checkpoint of %d entries published (recorded in %s). "+
		"The database was restored from an older copy; writing to it would fork the log, and witnesses that cosigned the larger tree would refuse it forever. "+
		"Recover the missing entries (binlog point-in-time recovery to the time of the failure; see deploy/mysql.md) and start again. "+
		"Remove %s only if the larger checkpoint never left this machine",
		ErrStaleTree, size, g.high, g.path, g.path)
}

func (g *guard) tripped() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stale
}

// saw records checkpoint raw (its size is its second line).
func (g *guard) saw(raw []byte) {
	if g.path == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if bytes.Equal(raw, g.last) {
		return
	}
	g.last = bytes.Clone(raw)
	lines := bytes.SplitN(raw, []byte("\n"), 3)
	if len(lines) < 3 {
		return
	}
	size, err := strconv.ParseUint(string(lines[1]), 10, 64)
	if err != nil {
		return
	}
	if err := g.check(size); err != nil {
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
