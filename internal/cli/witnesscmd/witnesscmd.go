// Package witnesscmd is the docket-witness command, a transparency log witness: it serves the C2SP
// tlog-witness protocol, cosigning (cosignature/v1, Ed25519) the checkpoints of
// the logs it is configured with, only when they are consistent with the
// latest checkpoint it cosigned for that log. See package
// github.com/docketlog/docket/witness for the HTTP interface and status codes.
//
// Usage:
//
//	docket-witness -key FILE -db FILE -logs FILE [-listen ADDR] [-rate N] [-v]
//
// Run "docket-witness -h" for the options.
package witnesscmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/witness"
	"golang.org/x/mod/sumdb/note"
)

const usage = `Usage:
    docket-witness -key FILE -db FILE -logs FILE [-listen ADDR] [-rate N] [-v]

docket-witness cosigns the checkpoints of transparency logs (C2SP tlog-witness,
POST /add-checkpoint) after checking that each one extends the latest checkpoint
it cosigned for that log. It serves the latest cosigned checkpoint of each log at
GET /<hex sha256(origin)>/checkpoint, refused checkpoints (forks, bad proofs) at
GET /evidence, and GET /health.

At startup it prints "vkey <key>" (its cosignature/v1 verifier key, for the
"witness" line of a log's tlog-policy file) and "listen <address>" on stdout.
Logs go to stderr.

Options:
    -listen ADDR   Address to serve HTTP on. Default localhost:7380.
                   Use 127.0.0.1:0 for a free port (printed at startup).
    -key FILE      The witness's signed-note Ed25519 private key, as written by
                   "docket keygen -witness NAME -o FILE". The file must not be
                   readable by group or others (mode 0600).
    -db FILE       SQLite database holding the latest cosigned checkpoint of
                   each log and the evidence of refused ones. Created if missing.
    -logs FILE     C2SP tlog-policy file: its "log <vkey> [<url>]" lines are the
                   logs to witness. The whole file must be valid tlog-policy,
                   with its one quorum line ("quorum none" if it only lists
                   logs). Reloaded on SIGHUP and when the file changes; a bad
                   file keeps the old list.
    -rate N        add-checkpoint requests per second accepted per log (burst
                   2N). Default 50. 0 disables the limit.
    -v             Log every request, including refused ones.

Examples:
    $ docket keygen -witness witness.example.org -o witness.key
    $ cat logs.policy
    log log.example.org+6c23ea6b+AaRq2pXmJ9tPz5d1R9eSg3xKcWbhH0dEw1nKXfC2uMxY https://log.example.org/
    quorum none
    $ docket-witness -listen :7380 -key witness.key -db witness.db -logs logs.policy
    vkey witness.example.org+1e0a54b3+BD3ZQe...
    listen [::]:7380

Exit codes:
    0  shut down cleanly on SIGINT or SIGTERM
    1  error while serving (listener, database)
    2  usage or configuration error (flags, key file, log list)
`

// reloadInterval is how often the log list file is checked for changes.
const reloadInterval = 5 * time.Second

// Run runs the docket-witness command line args (without the program name)
// until ctx is done, and returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	errorf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "docket-witness: error: "+format+"\n", a...)
	}
	fs := flag.NewFlagSet("docket-witness", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	listen := fs.String("listen", "localhost:7380", "")
	keyFile := fs.String("key", "", "")
	dbFile := fs.String("db", "", "")
	logsFile := fs.String("logs", "", "")
	rate := fs.Float64("rate", witness.DefaultRateLimit, "")
	verbose := fs.Bool("v", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		errorf("%v", err)
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		errorf("unexpected argument %q", fs.Arg(0))
		return 2
	case *keyFile == "" || *dbFile == "" || *logsFile == "":
		errorf("-key, -db and -logs are required")
		fmt.Fprint(stderr, usage)
		return 2
	case *rate < 0:
		errorf("-rate must not be negative")
		return 2
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	signer, vkey, err := loadKey(*keyFile)
	if err != nil {
		errorf("%v", err)
		return 2
	}
	logs, logsStat, err := loadLogs(*logsFile)
	if err != nil {
		errorf("%v", err)
		return 2
	}
	if len(logs) == 0 {
		logger.Warn("no log lines in the log list: every add-checkpoint gets 404", "file", *logsFile)
	}
	cfg := witness.Config{
		Signer:    signer,
		DBPath:    *dbFile,
		Logs:      logs,
		Logger:    logger,
		RateLimit: *rate,
		RateBurst: int(math.Ceil(2 * *rate)),
	}
	if *rate == 0 {
		cfg.RateLimit = -1
	}
	w, err := witness.New(cfg)
	if err != nil {
		errorf("%v", err)
		return 1
	}
	defer w.Close()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		errorf("%v", err)
		return 1
	}
	srv := &http.Server{
		Handler:           w,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	fmt.Fprintf(stdout, "vkey %s\nlisten %s\n", vkey, ln.Addr())
	logger.Info("witness started", "vkey", vkey, "listen", ln.Addr().String(), "logs", len(logs), "db", *dbFile)

	go watchLogs(ctx, logger, w, *logsFile, logsStat)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		errorf("serving: %v", err)
		return 1
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		errorf("shutting down: %v", err)
		return 1
	}
	if err := w.Close(); err != nil {
		errorf("closing database: %v", err)
		return 1
	}
	return 0
}

// loadKey reads the witness's private key, refusing a file that group or
// others can read.
func loadKey(path string) (note.Signer, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading key: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("reading key: %v", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, "", fmt.Errorf("key file %s has mode %04o: it must not be readable by group or others (chmod 600 %s)", path, perm, path)
	}
	skey, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, "", fmt.Errorf("reading key: %v", err)
	}
	s, vkey, err := c2sp.NewCosigner(string(skey))
	if err != nil {
		return nil, "", fmt.Errorf("key file %s: %v", path, err)
	}
	return s, vkey, nil
}

func loadLogs(path string) ([]witness.Log, os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading log list: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading log list: %v", err)
	}
	logs, err := witness.ParseLogs(data)
	if err != nil {
		return nil, nil, fmt.Errorf("log list %s: %v", path, err)
	}
	return logs, fi, nil
}

// watchLogs reloads the log list on SIGHUP, and when the file's modification
// time or size changes. A list that fails to load leaves the current one.
func watchLogs(ctx context.Context, logger *slog.Logger, w *witness.Witness, path string, last os.FileInfo) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(reloadInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-tick.C:
			fi, err := os.Stat(path)
			if err != nil || (fi.ModTime().Equal(last.ModTime()) && fi.Size() == last.Size()) {
				continue
			}
		}
		logs, fi, err := loadLogs(path)
		if err != nil {
			logger.Error("reloading log list, keeping the current one", "error", err)
			if fi, statErr := os.Stat(path); statErr == nil {
				last = fi // do not retry a bad file until it changes again
			}
			continue
		}
		if err := w.SetLogs(logs); err != nil {
			logger.Error("reloading log list, keeping the current one", "error", err)
			continue
		}
		last = fi
		logger.Info("reloaded log list", "file", path, "logs", len(logs))
	}
}
