// Package mysql is the storage of a Docket log in a MySQL or MariaDB
// database: Tessera's MySQL driver (github.com/transparency-dev/tessera/storage/mysql)
// over a schema this package creates or migrates, a strict dedup index in
// the same database that several docket-log processes share (see Index),
// and a guard that refuses to write to a tree that is smaller than a
// checkpoint this writer has seen published (the database was restored
// from an older copy). Open returns them for log.Config.
//
// Deprecated: Tessera removed its MySQL driver from main (transparency-dev/tessera#901);
// it lives on only in the v1.0.x patch line that Docket pins. New logs go
// on -storage aws (package aws: any MySQL-compatible database plus any
// S3-compatible object store), and `docket-log migrate` moves an existing
// one there; this package goes when Docket moves to a Tessera release
// without the driver (see deploy/README.md).
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/transparency-dev/tessera"
	tmysql "github.com/transparency-dev/tessera/storage/mysql"

	"github.com/docketlog/docket/log/internal/restore"
	"github.com/docketlog/docket/log/internal/tiles"
	"github.com/docketlog/docket/log/mysqlindex"
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

// Index is the dedup index shared by the database's writers (see package
// mysqlindex).
type Index = mysqlindex.Index

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
var ErrStaleTree = restore.ErrStaleTree

// recovery is how to recover from a stale restore, for the guard's errors.
const recovery = "Recover the missing entries (binlog point-in-time recovery to the time of the failure; see deploy/mysql.md)"

// Open connects to the database named in dsn (go-sql-driver form,
// user:password@tcp(host:3306)/dbname), creates or migrates the schema,
// checks the restore guard and opens the Tessera driver and the index.
// Close releases it all.
func Open(ctx context.Context, dsn string, opts Options) (*Storage, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := mysqlindex.Connect(ctx, dsn, opts.MaxOpenConns)
	if err != nil {
		return nil, err
	}
	tdb, err := mysqlindex.Connect(ctx, dsn, 16)
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
	if err := migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("mysql schema: %w", err)
	}
	var guardFile string
	if opts.StateDir != "" {
		guardFile = filepath.Join(opts.StateDir, HighWaterFile)
	}
	g, err := restore.Load(guardFile, recovery, opts.Logger)
	if err != nil {
		return nil, err
	}
	if opts.StateDir != "" {
		var size uint64
		if err := db.QueryRowContext(ctx, "SELECT `size` FROM `TreeState` WHERE `id` = 0").Scan(&size); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("mysql: reading the tree size: %w", err)
		}
		if err := g.Check("the database", size); err != nil {
			return nil, err
		}
		if err := g.Witnessed("the database", size, opts.Cosigned, opts.CosignedBy); err != nil {
			return nil, err
		}
	}
	t, err := tmysql.New(ctx, tdb)
	if err != nil {
		return nil, fmt.Errorf("tessera storage: %w", err)
	}
	s.Driver = &driver{t: t, g: g}
	// Tessera's MySQL driver sequences and integrates in one transaction
	// that locks TreeState.
	if s.Index, err = mysqlindex.Open(ctx, db, "SELECT `size` FROM `TreeState` WHERE `id` = 0 LOCK IN SHARE MODE", 0); err != nil {
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

// Reader returns a reader of the log in the database that appends nothing:
// its checkpoint, and its tiles and entry bundles trimmed to the width
// asked for (docket-log migrate reads the log through it).
func (s *Storage) Reader() tessera.LogReader {
	d := s.Driver.(*driver)
	return &reader{LogReader: d.t, g: d.g}
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

// driver is Tessera's MySQL driver with the restore guard around its
// appender and reader.
type driver struct {
	t *tmysql.Storage
	g *restore.Guard
}

func (d *driver) Appender(ctx context.Context, opts *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	a, r, err := d.t.Appender(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	add := a.Add
	a.Add = func(ctx context.Context, e *tessera.Entry) tessera.IndexFuture {
		if err := d.g.Tripped(); err != nil {
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
	g *restore.Guard
}

func (r *reader) ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	t, err := r.LogReader.ReadTile(ctx, level, index, p)
	if err != nil {
		return nil, err
	}
	if t, err = tiles.TrimTile(t, p); err != nil {
		return nil, fmt.Errorf("tile %d/%d: %w", level, index, err)
	}
	return t, nil
}

func (r *reader) ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error) {
	b, err := r.LogReader.ReadEntryBundle(ctx, index, p)
	if err != nil {
		return nil, err
	}
	if b, err = tiles.TrimBundle(b, p); err != nil {
		return nil, fmt.Errorf("entry bundle %d: %w", index, err)
	}
	return b, nil
}

func (r *reader) ReadCheckpoint(ctx context.Context) ([]byte, error) {
	raw, err := r.LogReader.ReadCheckpoint(ctx)
	if err == nil {
		r.g.Saw(raw)
	}
	return raw, err
}
