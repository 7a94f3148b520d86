// Package aws is the storage of a Docket log on any MySQL-compatible
// database plus any S3-compatible object store: Tessera's AWS driver
// (github.com/transparency-dev/tessera/storage/aws) coordinates writes in
// the database and writes entry bundles, hash tiles and checkpoints to the
// bucket, where readers fetch them (directly, or through a CDN); Docket's
// strict dedup index is in the same database (package mysqlindex), shared
// by every docket-log writing to the log; and a restore guard refuses a
// database or bucket older than what was published. Open returns them for
// log.Config.
//
// The log reads its own tiles, entry bundles and checkpoint from the
// bucket, and the tree size from the database. A partial tile or bundle
// that Tessera's garbage collector has removed is read from the full one
// and trimmed (c2sp.org/tlog-tiles).
package aws

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api/layout"
	taws "github.com/transparency-dev/tessera/storage/aws"

	"github.com/docketlog/docket/log/internal/restore"
	"github.com/docketlog/docket/log/mysqlindex"
)

// MinCheckpointInterval is the shortest checkpoint interval Tessera's AWS
// driver accepts.
const MinCheckpointInterval = time.Second

// HighWaterFile is the name, in Options.StateDir, of the file that records
// the largest published checkpoint this writer has seen.
const HighWaterFile = "aws-high-water"

// SchemaVersion is the version of Docket's tables in the database,
// recorded in DocketSchema. Tessera's AWS driver creates and versions its
// own tables (Tessera, SeqCoord, Seq, IntCoord, PubCoord, GCCoord).
// Version 2 keeps the dedup index's claims on disk (see mysqlindex.Schema);
// version 3 adds the fence tables.
const SchemaVersion = 3

// Options configure Open.
type Options struct {
	// DSN names the database, in go-sql-driver form:
	// user:password@tcp(host:3306)/dbname. It must not hold another log.
	DSN string
	// Bucket is the S3 bucket of the log's tiles, entry bundles and
	// checkpoint.
	Bucket string
	// Prefix, if set, is the key prefix of the log's objects in Bucket
	// (several logs may share a bucket).
	Prefix string
	// Endpoint, if set, is the URL of an S3-compatible server other than
	// AWS (MinIO, Versity, SeaweedFS, Ceph, …), addressed path-style.
	Endpoint string
	// SDKConfig, if set, replaces the AWS SDK's default configuration
	// (credentials and region from the standard environment variables,
	// shared config files, and instance or task roles).
	SDKConfig *awssdk.Config
	// StateDir is a local directory where the restore guard keeps
	// HighWaterFile. Empty disables that part of the guard.
	StateDir string
	// Cosigned is the largest tree size a witness of the log has
	// cosigned, as docket-log learned from the witnesses at start (0:
	// unknown), and CosignedBy names that witness. A database or bucket
	// whose tree is smaller was restored from an older copy.
	Cosigned   uint64
	CosignedBy string
	// HTTPClient reaches the witnesses (nil: http.DefaultClient).
	HTTPClient *http.Client
	// MaxOpenConns bounds the connections of the dedup index and the
	// reader (default 64). Tessera's driver has a pool of its own.
	MaxOpenConns int
	// Logger receives notable events; nil discards.
	Logger *slog.Logger
}

// Storage is an opened database and bucket.
type Storage struct {
	// Driver is Tessera's AWS driver, reading through the restore guard.
	Driver tessera.Driver
	// Index is the dedup index shared by the log's writers.
	Index *mysqlindex.Index
	// DB is the pool of the index and of the reader's queries.
	DB *sql.DB

	tessera tessera.Driver // Tessera's AWS driver itself
	bucket  *bucket
	guard   *restore.Guard
	tcfg    taws.Config
	logger  *slog.Logger
}

// recovery is how to recover from a stale restore, for the guard's errors.
const recovery = "Restore the database to the time of the failure (point-in-time recovery) and the bucket's objects " +
	"(versioning), or recover the missing entries from a writer or mirror that has them (see deploy/aws.md)"

// Open connects to the database and the bucket, creates Docket's tables,
// checks the restore guard, and opens Tessera's AWS driver and the dedup
// index. Close releases what Open holds.
func Open(ctx context.Context, opts Options) (*Storage, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bucket == "" {
		return nil, errors.New("aws: no bucket")
	}
	db, err := mysqlindex.Connect(ctx, opts.DSN, opts.MaxOpenConns)
	if err != nil {
		return nil, err
	}
	s := &Storage{DB: db, logger: opts.Logger}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := migrate(ctx, db); err != nil {
		return nil, fmt.Errorf("mysql schema: %w", err)
	}

	sdk, s3opts, err := sdkConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.bucket = &bucket{client: s3.NewFromConfig(sdk, s3opts), name: opts.Bucket, prefix: opts.Prefix}

	var guardFile string
	if opts.StateDir != "" {
		guardFile = filepath.Join(opts.StateDir, HighWaterFile)
	}
	if s.guard, err = restore.Load(guardFile, recovery, opts.Logger); err != nil {
		return nil, err
	}
	if err := s.checkRestore(ctx, opts.Cosigned, opts.CosignedBy); err != nil {
		return nil, err
	}

	// Each of Tessera's connections carries this writer's id, which the
	// fence trigger checks in each sequencing transaction.
	writer, err := writerID()
	if err != nil {
		return nil, err
	}
	tdsn, err := withWriter(opts.DSN, writer)
	if err != nil {
		return nil, err
	}
	s.tcfg = taws.Config{
		Bucket:       opts.Bucket,
		BucketPrefix: opts.Prefix,
		DSN:          tdsn,
		MaxOpenConns: 16,
		MaxIdleConns: 16,
		HTTPClient:   opts.HTTPClient,
	}
	// Tessera's S3 client is this package's configuration (the SDK's
	// default chain unless Options name another), with a hook that tells
	// the reader at once when this writer published a checkpoint. Given a
	// configuration, Tessera logs at start that it runs in "non-AWS mode":
	// it cannot tell that this one is AWS's own.
	r := &reader{bucket: s.bucket, db: db, guard: s.guard}
	cpKey := s.bucket.key(layout.CheckpointPath)
	s.tcfg.SDKConfig = &sdk
	s.tcfg.S3Options = func(o *s3.Options) {
		s3opts(o)
		o.APIOptions = append(o.APIOptions, afterPut(cpKey, r.ownPublished))
	}
	if s.tessera, err = taws.New(ctx, s.tcfg); err != nil {
		return nil, fmt.Errorf("tessera storage: %w", err)
	}
	t, isAppender := s.tessera.(appenderDriver)
	if !isAppender {
		return nil, fmt.Errorf("tessera storage: %T has no appender", s.tessera)
	}
	// Tessera's AWS driver sequences a batch in a transaction that locks
	// the SeqCoord row; the index waits for it (see mysqlindex.Open).
	if s.Index, err = mysqlindex.Open(ctx, db, "SELECT `next` FROM `SeqCoord` WHERE `id` = 0 LOCK IN SHARE MODE", writer); err != nil {
		return nil, fmt.Errorf("dedup index: %w", err)
	}
	s.Driver = &driver{t: t, r: r, g: s.guard, db: db, idx: s.Index, logger: opts.Logger}
	ok = true
	return s, nil
}

// Close closes the index and the connection pool. The log using the
// storage must be closed first.
func (s *Storage) Close() error {
	var err error
	if s.Index != nil {
		err = s.Index.Close()
	}
	return errors.Join(err, s.DB.Close())
}

// sdkConfig returns the AWS SDK configuration of opts and the S3 client
// options: a non-AWS endpoint is addressed path-style, and gets a region
// (us-east-1) if the configuration names none, as SigV4 needs one.
func sdkConfig(ctx context.Context, opts Options) (awssdk.Config, func(*s3.Options), error) {
	var sdk awssdk.Config
	if opts.SDKConfig != nil {
		sdk = opts.SDKConfig.Copy()
	} else {
		var err error
		if sdk, err = config.LoadDefaultConfig(ctx); err != nil {
			return sdk, nil, fmt.Errorf("aws configuration: %w", err)
		}
	}
	if opts.Endpoint == "" {
		return sdk, func(*s3.Options) {}, nil
	}
	if !strings.HasPrefix(opts.Endpoint, "http://") && !strings.HasPrefix(opts.Endpoint, "https://") {
		return sdk, nil, fmt.Errorf("s3 endpoint %q: want an http:// or https:// URL", opts.Endpoint)
	}
	if sdk.Region == "" {
		sdk.Region = "us-east-1"
	}
	endpoint := opts.Endpoint
	return sdk, func(o *s3.Options) {
		o.BaseEndpoint = awssdk.String(endpoint)
		o.UsePathStyle = true
	}, nil
}

// checkRestore is the restore guard at start: it refuses a database or a
// bucket that holds fewer entries than this writer saw published or a
// witness cosigned, a bucket whose checkpoint is ahead of the database's
// tree (a database restored from an older copy, or another log's
// bucket), and a bucket that lacks the entries of the database's tree (a
// bucket restored from an older copy, or a new one).
func (s *Storage) checkRestore(ctx context.Context, cosigned uint64, by string) error {
	dbSize, err := queryUint(ctx, s.DB, "SELECT `seq` FROM `IntCoord` WHERE `id` = 0")
	if err != nil {
		return fmt.Errorf("mysql: reading the tree size: %w", err)
	}
	var bucketSize uint64
	cp, err := s.bucket.get(ctx, layout.CheckpointPath)
	switch {
	case err == nil:
		if bucketSize, err = restore.Size(cp); err != nil {
			return fmt.Errorf("the bucket's checkpoint: %w", err)
		}
	case errors.Is(err, errNotFound):
	default:
		return fmt.Errorf("reading the bucket's checkpoint: %w", err)
	}
	for _, c := range []struct {
		what string
		size uint64
	}{{"the database", dbSize}, {"the bucket's checkpoint", bucketSize}} {
		if err := s.guard.Check(c.what, c.size); err != nil {
			return err
		}
		if err := s.guard.Witnessed(c.what, c.size, cosigned, by); err != nil {
			return err
		}
	}
	if bucketSize > dbSize {
		return fmt.Errorf("%w: the bucket's checkpoint covers %d entries, but the database's tree holds %d. "+
			"The database was restored from an older copy, or belongs to another log; writing to it would fork the log. %s",
			restore.ErrStaleTree, bucketSize, dbSize, recovery)
	}
	if dbSize == 0 {
		return nil
	}
	last := (dbSize - 1) / layout.EntryBundleWidth
	if _, err := s.bucket.bundle(ctx, last, layout.PartialTileSize(0, last, dbSize)); errors.Is(err, errNotFound) {
		return fmt.Errorf("%w: the database's tree holds %d entries, but the bucket has no entry bundle %d with the last of them. "+
			"The bucket was restored from an older copy, or is not this log's; writing to it would fork the log. %s",
			restore.ErrStaleTree, dbSize, last, recovery)
	} else if err != nil {
		return fmt.Errorf("reading the bucket: %w", err)
	}
	return nil
}

// driver is Tessera's AWS driver, with the restore guard on its appender
// and this package's reader in place of Tessera's.
type driver struct {
	t      appenderDriver
	r      *reader
	g      *restore.Guard
	db     *sql.DB
	idx    *mysqlindex.Index
	logger *slog.Logger
}

// appenderDriver is what Tessera's drivers implement (tessera.Driver is any).
type appenderDriver interface {
	Appender(context.Context, *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error)
}

func (d *driver) Appender(ctx context.Context, opts *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	a, _, err := d.t.Appender(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	// Tessera has created its tables now. The trigger only saves latency:
	// a server that refuses it (binary logging without
	// log_bin_trust_function_creators) leaves the log working.
	if _, err := d.db.ExecContext(ctx, publishSlack); err != nil {
		d.logger.Warn("could not create the publication trigger DocketPublishSlack (see deploy/aws.md): a lone write may wait a second longer for its checkpoint", "err", err)
	}
	if _, err := d.db.ExecContext(ctx, fenceTrigger); err != nil {
		d.logger.Warn("could not create the fence trigger DocketFence (see deploy/aws.md): a writer that lost its database connection in the middle of an append may append an entry another writer appends too", "err", err)
	}
	// More integrators: see Integrators.
	o := *opts
	o.WithGarbageCollectionInterval(0)
	go func() {
		for i := 1; i < Integrators; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(integrationTick / Integrators):
			}
			if _, _, err := d.t.Appender(ctx, &o); err != nil {
				d.logger.Warn("could not start another integrator: a lone write may wait longer for its checkpoint", "err", err)
				return
			}
		}
	}()
	add := a.Add
	a.Add = func(ctx context.Context, e *tessera.Entry) tessera.IndexFuture {
		if err := d.g.Tripped(); err != nil {
			return func() (tessera.Index, error) { return tessera.Index{}, err }
		}
		// The hash before the entry is handed over: Tessera's sequencer
		// writes the entry's index into it from its own goroutine.
		h := [32]byte(e.LeafHash())
		f := add(ctx, e)
		return func() (tessera.Index, error) {
			i, err := f()
			d.idx.Appended(h)
			return i, err
		}
	}
	return a, d.r, nil
}

// Integrators is how many of Tessera's integration loops a writer runs,
// started integrationTick/Integrators apart. Tessera's AWS driver
// integrates what was sequenced once a second (a fixed ticker of each
// appender; Tessera's own server has one), and publishes after each
// integration that grew the tree: so a lone write waited up to a second
// for the tick before its integration, S3 writes, witness round and
// upload. Each further appender of the driver is another loop with its own
// ticker; integrations are serialised by Tessera's IntCoord row, so they
// share the work rather than repeat it, and the wait for the next tick is
// at most integrationTick/Integrators. Only the first appender takes
// entries or collects garbage.
const Integrators = 3

// integrationTick is the period of Tessera's integration loop.
const integrationTick = time.Second

// afterPut returns an S3 client option that calls f after each successful
// PutObject of key.
func afterPut(key string, f func()) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("DocketAfterPut",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if p, ok := in.Parameters.(*s3.PutObjectInput); ok && err == nil && awssdk.ToString(p.Key) == key {
					f()
				}
				return out, md, err
			}), middleware.After)
	}
}

// writerID returns a random id for this writer in the fence tables: not 0,
// and below 2^62, so that it is a plain integer in any SQL dialect.
func writerID() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("a writer id: %w", err)
	}
	return binary.BigEndian.Uint64(b[:])>>2 | 1, nil
}

// withWriter returns dsn with the session variable @docket_writer set to
// writer on each connection.
func withWriter(dsn string, writer uint64) (string, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("mysql dsn: %w", err)
	}
	params := make(map[string]string, len(cfg.Params)+1)
	for k, v := range cfg.Params {
		params[k] = v
	}
	params["@docket_writer"] = strconv.FormatUint(writer, 10)
	cfg.Params = params
	return cfg.FormatDSN(), nil
}

// queryUint runs a query of one unsigned integer. A missing table or row
// (a database Tessera has not set up yet) reads as 0.
func queryUint(ctx context.Context, db *sql.DB, q string) (uint64, error) {
	var n uint64
	err := db.QueryRowContext(ctx, q).Scan(&n)
	var me *gomysql.MySQLError
	if errors.Is(err, sql.ErrNoRows) || errors.As(err, &me) && me.Number == 1146 { // ER_NO_SUCH_TABLE
		return 0, nil
	}
	return n, err
}
