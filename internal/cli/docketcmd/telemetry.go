package docketcmd

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
	"github.com/docketlog/docket/telemetry"
)

// telemetryFlush bounds the export of the buffered spans at exit.
const telemetryFlush = 3 * time.Second

// openTelemetry returns the span exporter the OTEL_* environment asks for
// (docket mcp and docket sync; never the hooks), or nil. A configuration
// it cannot honour is one warning, and nothing is exported.
func openTelemetry(stderr io.Writer) *telemetry.Exporter {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tel, err := telemetry.FromEnv(nil, "docket", logger)
	if err != nil {
		warnf(stderr, "OpenTelemetry export is off: %v", err)
		return nil
	}
	return tel
}

// closeTelemetry exports what is buffered, waiting at most telemetryFlush.
func closeTelemetry(ctx context.Context, tel *telemetry.Exporter) {
	if tel == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlush)
	defer cancel()
	_ = tel.Shutdown(sctx)
}

// chainLookup finds a receipt of a session chain by its hash, reading each
// chain it is asked about once.
func chainLookup(st *store.Store) func(session, hash string) []byte {
	chains := map[string]map[string][]byte{}
	return func(session, hash string) []byte {
		byHash, ok := chains[session]
		if !ok {
			byHash = map[string][]byte{}
			recs, _ := st.Receipts(session)
			for _, r := range recs {
				if h, err := receipts.Hash(r); err == nil {
					byHash[h] = r
				}
			}
			chains[session] = byHash
		}
		return byHash[hash]
	}
}
