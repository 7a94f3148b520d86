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
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docketlog/docket/audit"
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
` + profileOptions

func runExplore(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("explore", exploreUsage, stderr)
	var lf logFlags
	lf.register(fs)
	listen := fs.String("listen", "127.0.0.1:7390", "")
	stateDir := fs.String("state", "", "")
	var pf profileFlags
	pf.register(fs)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	stopProfile, ok := pf.run(stderr, "explore")
	if !ok {
		return 2
	}
	defer stopProfile()
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

// checkExplorerURL refuses an -explorer that is not an http(s) URL.
func checkExplorerURL(base string) error {
	if base == "" {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-explorer %q: want the http(s) URL docket explore serves at", base)
	}
	return nil
}

// explorerPages returns the pages of the explorer at base that show what
// f is about: the entries its evidence names (or the entry it is about),
// else the entries of its session, else its issuer's page.
func explorerPages(base string, f audit.Finding) []string {
	base = strings.TrimSuffix(base, "/")
	var pages []string
	if f.EvidenceFile != "" {
		if b, err := os.ReadFile(f.EvidenceFile); err == nil {
			if ev, err := audit.ParseEvidence(b); err == nil {
				for _, e := range ev.Entries {
					pages = append(pages, fmt.Sprintf("%s/entry/%d", base, e.Index))
				}
			}
		}
	}
	switch {
	case len(pages) > 0:
	case f.Index > 0:
		pages = append(pages, fmt.Sprintf("%s/entry/%d", base, f.Index))
	case f.Session != "":
		pages = append(pages, base+"/search?"+url.Values{"issuer": {f.Issuer}, "session": {f.Session}}.Encode())
	case f.Issuer != "":
		pages = append(pages, base+"/issuer/"+url.PathEscape(f.Issuer))
	}
	return pages
}

// withExplorerPages is f as -json writes it: with its pages on the
// explorer at base ("explorer"), when base is given.
func withExplorerPages(f audit.Finding, base string) any {
	if base == "" {
		return f
	}
	return struct {
		audit.Finding
		Explorer []string `json:"explorer,omitempty"`
	}{f, explorerPages(base, f)}
}

// explorerLinks lists, after a report, the pages on the explorer at base
// of each finding that has some ("" without base).
func explorerLinks(findings []audit.Finding, base string) string {
	if base == "" {
		return ""
	}
	var b strings.Builder
	for _, f := range findings {
		if pages := explorerPages(base, f); len(pages) > 0 {
			if b.Len() == 0 {
				b.WriteString("On the explorer:\n")
			}
			label := f.Kind
			if f.Session != "" {
				label += " in session " + f.Session
			}
			if f.Sequence > 0 {
				label += fmt.Sprintf(" at sequence %d", f.Sequence)
			}
			fmt.Fprintf(&b, "  %s: %s\n", label, strings.Join(pages, " "))
		}
	}
	return b.String()
}
