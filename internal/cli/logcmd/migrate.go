package logcmd

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	tclient "github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
	"k8s.io/klog/v2"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log/aws"
	//lint:ignore SA1019 migrate reads -storage mysql logs to move them off it
	"github.com/docketlog/docket/log/mysql"
	"github.com/docketlog/docket/log/posix"
)

const migrateUsage = `Usage:
    docket-log migrate -key FILE (-from DIR | -from-mysql DSN)
                       -mysql-dsn DSN -s3-bucket NAME [-s3-prefix P] [-s3-endpoint URL]

Moves a log from POSIX storage or from -storage mysql to -storage aws without
losing or renumbering an entry: the entry bundles are copied into the bucket,
Tessera builds the tree from them and checks its root against the source's
checkpoint (signed by the log key), the dedup index is built from the
bucket, and the source's checkpoint is copied last, with its cosignatures.
Stop the source's writers first: a POSIX directory is locked for the
migration, and a source that publishes a new checkpoint meanwhile fails it.
A migration cut short resumes when run again. Then start docket-log
-storage aws on the database and bucket.

Options:
    -key FILE           the log's key (its name and public key check the source)
    -from DIR           the source: a POSIX storage directory (docket-log -storage-dir)
    -from-mysql DSN     the source: a -storage mysql database
    -mysql-dsn DSN      the destination database (empty, or a cut-short migration's)
    -s3-bucket NAME, -s3-prefix P, -s3-endpoint URL
                        the destination bucket, as for docket-log -storage aws
    -workers N          entry bundles copied at once (default 8)

Exit status: 0 moved, with equal roots; 1 otherwise; 2 usage.
`

// runMigrate is docket-log migrate.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("docket-log migrate", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, migrateUsage) }
	var (
		keyFile   = fl.String("key", "", "")
		fromDir   = fl.String("from", "", "")
		fromMySQL = fl.String("from-mysql", "", "")
		dsn       = fl.String("mysql-dsn", "", "")
		bucket    = fl.String("s3-bucket", "", "")
		prefix    = fl.String("s3-prefix", "", "")
		endpoint  = fl.String("s3-endpoint", "", "")
		workers   = fl.Uint("workers", 8, "")
	)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "docket-log migrate: error: %s\n", msg)
		return 2
	}
	switch {
	case fl.NArg() > 0:
		return usage(fmt.Sprintf("unexpected arguments %q", fl.Args()))
	case *keyFile == "":
		return usage("-key is required")
	case (*fromDir == "") == (*fromMySQL == ""):
		return usage("give one source: -from DIR or -from-mysql DSN")
	case *dsn == "" || *bucket == "":
		return usage("-mysql-dsn and -s3-bucket are required")
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "docket-log migrate: error: "+format+"\n", args...)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	klog.SetSlogLogger(logger) // Tessera reports its progress through klog
	_, vkey, err := c2sp.LoadSigner(*keyFile)
	if err != nil {
		return fail("log key: %v", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return fail("log key: %v", err)
	}

	var src aws.Source
	from := *fromDir
	if from != "" {
		// The lock keeps a docket-log out of the directory meanwhile.
		st, err := posix.Open(ctx, from, nil, logger)
		if err != nil {
			return fail("source: %v", err)
		}
		defer st.Close()
		src = tclient.FileFetcher{Root: from}
	} else {
		from = "the -from-mysql database"
		st, err := mysql.Open(ctx, *fromMySQL, mysql.Options{Logger: logger})
		if err != nil {
			return fail("source: %v", err)
		}
		defer st.Close()
		src = st.Reader()
	}
	st, err := aws.Open(ctx, aws.Options{DSN: *dsn, Bucket: *bucket, Prefix: *prefix, Endpoint: *endpoint, Logger: logger})
	if err != nil {
		return fail("destination: %v", err)
	}
	defer st.Close()
	cp, err := st.Migrate(ctx, src, v, *workers)
	if err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "moved %d entries from %s; root %s, equal to the source checkpoint's\n",
		cp.Size, from, base64.StdEncoding.EncodeToString(cp.Hash))
	return 0
}
