// Package logcmd is the docket-log command: Docket's transparency log, a
// Tessera log on POSIX storage, in a MySQL/MariaDB database, or in a
// MySQL-compatible database plus an S3-compatible object store, that
// accepts receipts (POST /add), answers each with a c2sp.org/tlog-proof@v1,
// and serves the C2SP tlog-tiles read API (from the bucket, with -storage aws).
package logcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only with -pprof ADDR
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/note"
	"k8s.io/klog/v2"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/aws"
	//lint:ignore SA1019 -storage mysql is served until it is removed (deploy/README.md)
	"github.com/docketlog/docket/log/mysql"
	"github.com/docketlog/docket/log/posix"
	"github.com/docketlog/docket/receipts"
)

const usage = `Usage:
    docket-log [options]
    docket-log migrate -key FILE (-from DIR | -from-mysql DSN) -mysql-dsn DSN -s3-bucket NAME ...
                                   (moves a log to -storage aws; docket-log migrate -h)

Runs a Docket transparency log on Tessera POSIX storage, in a MySQL or
MariaDB database, or in a MySQL-compatible database plus an S3-compatible
bucket (-storage aws); several docket-log processes may write to either of
the last two at once. With -storage aws, readers fetch the log from the
bucket's (or a CDN's) URL, and docket-log answers only POST /add and /health
unless -serve-reads.

API:
    POST /add                      one entry {"public_key","receipt"} → 200 c2sp.org/tlog-proof@v1
                                   400 malformed or incomplete body, 413 too large (checked
                                   against Content-Length first), 422 bad signature or kid,
                                   401 missing or bad token, 403 issuer not allowed,
                                   503 + Retry-After overloaded, storage not writable,
                                   or no checkpoint in time
    GET  /checkpoint, /tile/...    C2SP tlog-tiles
    GET  /health                   200 while the log can accept and serve entries; 503
                                   not_writable (a write to storage failed and none has
                                   succeeded since, or a probe write fails: a full disk),
                                   checkpoint_unreadable (the published checkpoint cannot be
                                   read), or stale_checkpoint
    Every error is JSON {"error","message"}: unknown paths (404), methods (405, with Allow),
    bodies declared over 64 KiB (413 at once, unread) and malformed requests included.

Options:
    -listen ADDR              address to listen on (default 127.0.0.1:7780)
    -storage posix|mysql|aws  where the log is (default posix)
    -storage-dir DIR          Tessera POSIX storage directory (default ./docket-data); with
                              -storage mysql or aws, only this writer's local state (a generated
                              key, the restore guard's record of the largest published checkpoint)
    -mysql-dsn DSN            with -storage mysql or aws: user:password@tcp(host:3306)/dbname
                              (go-sql-driver form); the schema is created or migrated at start
    -s3-bucket NAME           with -storage aws: the bucket of the log's tiles, bundles and
                              checkpoint; credentials and region from the AWS SDK's default chain
                              (AWS_ACCESS_KEY_ID, AWS_REGION, AWS_PROFILE, ~/.aws, instance roles)
    -s3-prefix P              with -storage aws: key prefix of the log's objects in the bucket
    -s3-endpoint URL          with -storage aws: an S3-compatible server other than AWS (MinIO,
                              Versity, SeaweedFS, Ceph), addressed path-style
    -serve-reads              with -storage aws: also serve the read API, from the bucket
                              (small deployments; otherwise readers use the bucket's URL)
    -key FILE                 note signer key (docket keygen -log ORIGIN -o FILE); without it a
                              key is made on first start in DIR/.docket-log/log.key
    -origin NAME              origin of a generated key (default localhost/docket-log)
    -witness-policy FILE      C2SP tlog-policy: publish only checkpoints the quorum cosigned
    -witness-timeout D        bound on one witnessing round (default 2s)
    -issuers FILE             JWKS of the issuer keys allowed to write
    -tokens FILE              bearer tokens allowed to write, one per line (mode 0600)
    -checkpoint-interval D    minimum time between checkpoints (default 100ms; 1s, the least
                              Tessera's MySQL and AWS drivers accept, with -storage mysql or aws)
    -republish D              re-sign an unchanged checkpoint this often (default 10s)
    -batch-size N             largest sequencing batch (default 4096 with -storage posix, where
                              one batch is written per checkpoint, else 1024); batches form while the
                              previous one is written (group commit), so there is no batch timer
    -publish-timeout D        how long POST /add waits for a checkpoint before 503 (default 10s)
    -max-inflight N           concurrent POST /add before 503 (default 2048)
    -max-conns N              connections served at once (default 1024). A connection keeps its
                              place while it is busy or idle under 5s; past the limit a
                              connection idle 5s is closed to make room (new ones wait for
                              that), and while all are busy new ones are answered 503 +
                              Retry-After (deploy/README.md: burst capacity)
    -max-checkpoint-age D     /health fails past this age (default 3×republish + witness timeout)
    -pprof ADDR               serve net/http/pprof on ADDR (debugging)
    -v                        debug logging (one line per request)

Environment:
    GOGC, GOMEMLIMIT          the Go collector's settings; docket-log's defaults are 400 and
                              128MiB or 4 times the live heap if more (fewer collections,
                              each of which scans every waiting request's stack, and the
                              heap still bounded)

Examples:
    docket keygen -log example.com/log -o log.key
    docket-log -key log.key -storage-dir /var/lib/docket-log
    docket-log -key log.key -witness-policy witnesses.policy
    docket-log -key log.key -storage mysql -mysql-dsn 'docket:PASS@tcp(db:3306)/docketlog'
    docket-log -key log.key -storage aws -mysql-dsn 'docket:PASS@tcp(db:3306)/docketlog' \
        -s3-bucket example-log -s3-prefix docket
`

// Run runs the docket-log command line args (without the program name)
// until ctx is done or the process gets SIGTERM or SIGINT, and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "migrate" {
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return runMigrate(ctx, args[1:], stdout, stderr)
	}
	fl := flag.NewFlagSet("docket-log", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	var (
		listen        = fl.String("listen", "127.0.0.1:7780", "")
		storageKind   = fl.String("storage", "posix", "")
		storageDir    = fl.String("storage-dir", "./docket-data", "")
		mysqlDSN      = fl.String("mysql-dsn", "", "")
		s3Bucket      = fl.String("s3-bucket", "", "")
		s3Prefix      = fl.String("s3-prefix", "", "")
		s3Endpoint    = fl.String("s3-endpoint", "", "")
		serveReads    = fl.Bool("serve-reads", false, "")
		keyFile       = fl.String("key", "", "")
		origin        = fl.String("origin", "", "")
		policyFile    = fl.String("witness-policy", "", "")
		issuersFile   = fl.String("issuers", "", "")
		tokensFile    = fl.String("tokens", "", "")
		verbose       = fl.Bool("v", false, "")
		pprofAddr     = fl.String("pprof", "", "")
		cfg           log.Config
		batchSize     uint
		maxConns      int
		witnessTimout time.Duration
	)
	fl.DurationVar(&witnessTimout, "witness-timeout", 2*time.Second, "")
	fl.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", 100*time.Millisecond, "")
	fl.DurationVar(&cfg.RepublishInterval, "republish", 10*time.Second, "")
	fl.UintVar(&batchSize, "batch-size", 1024, "")
	fl.DurationVar(&cfg.PublishTimeout, "publish-timeout", 10*time.Second, "")
	fl.IntVar(&cfg.MaxInFlight, "max-inflight", 2048, "")
	fl.IntVar(&maxConns, "max-conns", 1024, "")
	fl.DurationVar(&cfg.MaxCheckpointAge, "max-checkpoint-age", 0, "")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "docket-log: error: unexpected arguments %q\n", fl.Args())
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Tessera logs through klog and the default slog logger: route both
	// here, its checkpoint publisher's repeated failures summarised.
	slog.SetDefault(logger)
	klog.SetSlogLogger(slog.New(log.RepeatsHandler(logger.Handler())))
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "docket-log: error: "+format+"\n", args...)
		return 1
	}
	if maxConns < 1 {
		return fail("-max-conns %d: want at least 1", maxConns)
	}
	if limit := fdLimit(); !flagSet(fl, "max-conns") && checkFDs(maxConns, limit) != nil && maxConnsFor(limit) > 0 {
		// The default, lowered to what the limit allows.
		maxConns = maxConnsFor(limit)
		logger.Warn("-max-conns lowered to fit the limit on open files", "max_conns", maxConns, "limit", limit)
	} else if err := checkFDs(maxConns, limit); err != nil {
		return fail("%v", err)
	}
	cfg.BatchMaxSize = batchSize
	cfg.WitnessTimeout = witnessTimout
	cfg.Logger = logger

	if err := os.MkdirAll(filepath.Join(*storageDir, posix.StateDir), 0o700); err != nil {
		return fail("%v", err)
	}
	kf := *keyFile
	if kf == "" {
		kf = filepath.Join(*storageDir, posix.StateDir, "log.key")
		if _, err := os.Stat(kf); errors.Is(err, fs.ErrNotExist) {
			name := *origin
			if name == "" {
				name = "localhost/docket-log"
			}
			vkey, err := c2sp.GenerateKeyFile(kf, name)
			if err != nil {
				return fail("generating log key: %v", err)
			}
			fmt.Fprintln(stderr, "docket-log: generated a log key in", kf)
			fmt.Fprintln(stdout, vkey)
		}
	}
	signer, vkey, err := c2sp.LoadSigner(kf)
	if err != nil {
		return fail("log key: %v", err)
	}
	if *origin != "" && *origin != signer.Name() {
		return fail("-origin %q is not the key's name %q (the origin is the key name)", *origin, signer.Name())
	}
	cfg.Signer, cfg.VKey = signer, vkey
	if *policyFile != "" {
		if cfg.WitnessPolicy, err = os.ReadFile(*policyFile); err != nil {
			return fail("witness policy: %v", err)
		}
	}
	if *issuersFile != "" {
		if cfg.Issuers, err = receipts.LoadKeySet(*issuersFile); err != nil {
			return fail("issuers: %v", err)
		}
	}
	if *tokensFile != "" {
		if cfg.Tokens, err = readTokens(*tokensFile); err != nil {
			return fail("tokens: %v", err)
		}
	}

	if *pprofAddr != "" {
		go func() { logger.Warn("pprof", "err", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	setGC(ctx)
	if *storageKind != "aws" && (*s3Bucket != "" || *s3Prefix != "" || *s3Endpoint != "" || *serveReads) {
		return fail("-s3-bucket, -s3-prefix, -s3-endpoint and -serve-reads need -storage aws")
	}
	switch *storageKind {
	case "posix":
		if *mysqlDSN != "" {
			return fail("-mysql-dsn needs -storage mysql or aws")
		}
		st, err := posix.Open(ctx, *storageDir, &http.Client{Timeout: cfg.WitnessTimeout}, logger)
		if err != nil {
			return fail("%v", err)
		}
		defer st.Close()
		cfg.Driver, cfg.Index, cfg.Probe, cfg.Cleanup = st.Driver, st.Index, st.Probe, st.Cleanup
		cfg.PaceBatches = true
		if !flagSet(fl, "batch-size") {
			// One batch per checkpoint: a second batch would wait for the next.
			cfg.BatchMaxSize = 4 * batchSize
		}
	case "mysql":
		if *mysqlDSN == "" {
			return fail("-storage mysql needs -mysql-dsn")
		}
		if !flagSet(fl, "checkpoint-interval") {
			cfg.CheckpointInterval = mysql.MinCheckpointInterval
		}
		opts := mysql.Options{StateDir: filepath.Join(*storageDir, posix.StateDir), MaxOpenConns: 64, Logger: logger}
		// The witnesses know how large the log has been: a database smaller
		// than what one of them cosigned was restored from an older copy.
		opts.Cosigned, opts.CosignedBy = witnessedSize(ctx, cfg.WitnessPolicy, cfg.VKey, logger)
		st, err := mysql.Open(ctx, *mysqlDSN, opts)
		if err != nil {
			return fail("%v", err)
		}
		defer st.Close()
		cfg.Driver, cfg.Index, cfg.Probe = st.Driver, st.Index, st.Probe
	case "aws":
		if *mysqlDSN == "" || *s3Bucket == "" {
			return fail("-storage aws needs -mysql-dsn and -s3-bucket")
		}
		if !flagSet(fl, "checkpoint-interval") {
			cfg.CheckpointInterval = aws.MinCheckpointInterval
		}
		opts := aws.Options{DSN: *mysqlDSN, Bucket: *s3Bucket, Prefix: *s3Prefix, Endpoint: *s3Endpoint,
			StateDir: filepath.Join(*storageDir, posix.StateDir), HTTPClient: &http.Client{Timeout: cfg.WitnessTimeout},
			MaxOpenConns: 64, Logger: logger}
		opts.Cosigned, opts.CosignedBy = witnessedSize(ctx, cfg.WitnessPolicy, cfg.VKey, logger)
		st, err := aws.Open(ctx, opts)
		if err != nil {
			return fail("%v", err)
		}
		defer st.Close()
		cfg.Driver, cfg.Index = st.Driver, st.Index
	default:
		return fail("-storage %q: want posix, mysql or aws", *storageKind)
	}
	l, err := log.New(ctx, cfg)
	if err != nil {
		return fail("%v", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		l.Close(context.Background())
		return fail("%v", err)
	}
	limited := log.LimitConns(ln, maxConns)
	handler := l.Handler()
	if *storageKind == "aws" && !*serveReads {
		handler = writesOnly(handler)
	}
	srv := &http.Server{
		Handler: handler,
		// An entry is at most 64 KiB: a body that takes longer than
		// ReadTimeout is refused, and a slow or silent client holds a
		// connection only briefly.
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.PublishTimeout + 30*time.Second,
		IdleTimeout:       15 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("listening", "addr", ln.Addr().String(), "origin", signer.Name(), "vkey", vkey)
	errc := make(chan error, 1)
	go func() { errc <- limited.Serve(srv) }()
	select {
	case err := <-errc:
		l.Close(context.Background())
		return fail("serving: %v", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.PublishTimeout+20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	if err := l.Close(sctx); err != nil {
		return fail("shutdown: %v", err)
	}
	logger.Info("stopped")
	return 0
}

// writesOnly answers the read API (checkpoint, tiles) with 404 and a
// JSON error pointing readers at the bucket, and passes the rest to h.
func writesOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkpoint" || strings.HasPrefix(r.URL.Path, "/tile/") {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"not_found","message":"this docket-log serves writes only: read the log at its public URL (the bucket's or a CDN's)"}`+"\n")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// readTokens reads writer tokens, one per line (# comments), from a file
// that only its owner can read.
func readTokens(path string) ([]string, error) {
	if err := receipts.CheckKeyFileMode(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var toks []string
	for line := range strings.Lines(string(data)) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return toks, nil
}

// flagSet reports whether the command line set flag name.
func flagSet(fl *flag.FlagSet, name string) bool {
	set := false
	fl.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// witnessedSize returns the largest tree size that a witness of the policy
// (one with a URL) has cosigned for the log with key vkey, as it serves it
// at GET <url>/<log ID>/checkpoint (the log's signature checked), and which
// witness. Witnesses that cannot be asked are logged and skipped.
func witnessedSize(ctx context.Context, policy []byte, vkey string, logger *slog.Logger) (uint64, string) {
	if len(policy) == 0 {
		return 0, ""
	}
	p, err := c2sp.ParsePolicy(policy)
	if err != nil {
		return 0, ""
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return 0, ""
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var best uint64
	var by string
	for _, w := range p.Witnesses {
		if w.URL == "" {
			continue
		}
		u := strings.TrimSuffix(w.URL, "/") + "/" + c2sp.LogID(v.Name()) + "/checkpoint"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			continue
		}
		resp, err := client.Do(req)
		if err != nil {
			logger.Warn("restore guard: witness not reachable", "witness", w.Name, "err", err)
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			if resp.StatusCode != http.StatusNotFound { // 404: it has cosigned nothing yet
				logger.Warn("restore guard: witness did not answer", "witness", w.Name, "status", resp.Status, "err", err)
			}
			continue
		}
		cp, err := c2sp.OpenCheckpoint(v, body)
		if err != nil {
			logger.Warn("restore guard: witness served a checkpoint the log did not sign", "witness", w.Name, "err", err)
			continue
		}
		if cp.Size > best {
			best, by = cp.Size, w.Name
		}
	}
	return best, by
}

// The collector's defaults for docket-log (usage, Environment). Each
// request waits for a checkpoint on its own goroutines, so at 2,000
// clients every collection scans ~4,000 stacks: GC was 15% of the
// server's CPU at Go's default GOGC of 100 (issue 28). The memory limit
// keeps the heap bounded when a burst grows it; it follows the live heap
// (the dedup index's filter grows with the log, 1.25 bytes per entry), at
// least liveHeapRoom times it, so the collector never runs without end
// to hold a heap the log needs.
const (
	gcPercent    = 400
	memoryLimit  = 128 << 20
	liveHeapRoom = 4
)

// setGC applies the collector's defaults that GOGC and GOMEMLIMIT do not
// override, and raises the memory limit with the live heap, checked every
// second until ctx is done.
func setGC(ctx context.Context) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(memoryLimit)
	go func() {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() == metrics.KindUint64 {
				debug.SetMemoryLimit(max(memoryLimit, liveHeapRoom*int64(live[0].Value.Uint64())))
			}
		}
	}()
}
