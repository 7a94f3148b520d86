package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/docketlog/docket/explorer"
)

const exploreUsage = `Usage:
    docket explore -log URL|DIR -log-key VKEY [-witness-policy FILE] [-listen ADDR]

Serves a read-only web page over the log: its verified checkpoint, the
newest entries, each entry with its receipt and a recomputed inclusion
proof, and each issuer's verifiable index (check a downloaded one with
docket verify-index).

Options:
    -listen ADDR   where to serve (default 127.0.0.1:7390)
`

func runExplore(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore", exploreUsage, stderr)
	var lf logFlags
	lf.register(fs)
	listen := fs.String("listen", "127.0.0.1:7390", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	f, v, err := lf.open()
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// Refreshes run under ctx, not under the request that prompts one.
	e, err := explorer.New(ctx, explorer.Config{Fetcher: f, Verifier: v, Logger: logger})
	if err != nil {
		errorf(stderr, "explore: %v", err)
		return 2
	}
	go e.Refresh(ctx) // the first view of the log, before the first page asks
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
