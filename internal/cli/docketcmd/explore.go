package docketcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/docketlog/docket/explorer"
)

const exploreUsage = `Usage:
    docket explore -log URL|DIR -log-key VKEY [-witness-policy FILE] [-listen ADDR] [-state DIR]

Serves a read-only web site over the log: its verified checkpoint and
witnesses, every entry with a headline, its receipt and a recomputed
inclusion proof, a page per issuer and per session (the chain's verdict),
search and filters, charts, downloads (entries, .tlog-proof, JSONL), and
each issuer's verifiable index (check a downloaded page with docket
verify-index). It follows the log in the background and answers at once
with what it has verified so far; its index is kept in -state, so that a
restart reads only the entries that are new.

Options:
    -listen ADDR   where to serve (default 127.0.0.1:7390)
    -state DIR     where to keep the index (default: the user cache
                   directory, one per log and key)
`

func runExplore(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore", exploreUsage, stderr)
	var lf logFlags
	lf.register(fs)
	listen := fs.String("listen", "127.0.0.1:7390", "")
	stateDir := fs.String("state", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	f, v, err := lf.open()
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	dir := *stateDir
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			errorf(stderr, "explore: no -state and no user cache directory: %v", err)
			return 2
		}
		sum := sha256.Sum256([]byte(lf.log + "\n" + lf.logKey))
		dir = filepath.Join(cache, "docket", "explore", hex.EncodeToString(sum[:8]))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// The explorer follows the log under ctx, never under a request's.
	e, err := explorer.New(ctx, explorer.Config{Fetcher: f, Verifier: v, Logger: logger, Index: filepath.Join(dir, "explorer.db")})
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	defer e.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	fmt.Fprintf(stdout, "docket: exploring the log at http://%s/\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		errorf(stderr, "explore: %v", err)
		return 1
	}
	return 0
}
