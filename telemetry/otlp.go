package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type exporterConfig struct {
	endpoint string
	headers  map[string]string
	timeout  time.Duration
	json     bool
	gzip     bool
	logger   *slog.Logger
}

// spanExporter is an sdktrace.SpanExporter that POSTs each batch as an
// OTLP/HTTP ExportTraceServiceRequest (OTLP specification, "OTLP/HTTP").
// A failed export is logged once and otherwise dropped: a tool call never
// waits on it, and the SDK does not retry it.
type spanExporter struct {
	cfg    exporterConfig
	client *http.Client

	failOnce sync.Once // guards the one failure log line
}

func newSpanExporter(cfg exporterConfig) *spanExporter {
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	return &spanExporter{cfg: cfg, client: &http.Client{Timeout: cfg.timeout}}
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if err := e.post(ctx, spans); err != nil {
		e.failOnce.Do(func() {
			e.cfg.logger.Warn("OpenTelemetry export failed; spans are dropped (logged once)",
				"endpoint", e.cfg.endpoint, "err", err)
		})
	}
	return nil
}

func (e *spanExporter) post(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	var body []byte
	ctype := "application/x-protobuf"
	if e.cfg.json {
		body, ctype = encodeJSON(spans), "application/json"
	} else {
		body = encodeProto(spans)
	}
	var rd io.Reader = bytes.NewReader(body)
	if e.cfg.gzip {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(body)
		_ = zw.Close()
		rd = &zb
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.endpoint, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", ctype)
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range e.cfg.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %q", resp.Status, msg)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *spanExporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// A group is the spans of one resource and instrumentation scope
// (ResourceSpans holding one ScopeSpans).
type group struct {
	res   *resource.Resource
	scope instrumentation.Scope
	spans []sdktrace.ReadOnlySpan
}

func groups(spans []sdktrace.ReadOnlySpan) []*group {
	var gs []*group
	for _, s := range spans {
		var g *group
		for _, c := range gs {
			if c.res.Equivalent() == s.Resource().Equivalent() && c.scope == s.InstrumentationScope() {
				g = c
				break
			}
		}
		if g == nil {
			g = &group{res: s.Resource(), scope: s.InstrumentationScope()}
			gs = append(gs, g)
		}
		g.spans = append(g.spans, s)
	}
	return gs
}

// attrValue is an attribute's value as OTLP's AnyValue holds it.
func attrValue(v attribute.Value) (kind string, val any) {
	switch v.Type() {
	case attribute.BOOL:
		return "bool", v.AsBool()
	case attribute.INT64:
		return "int", v.AsInt64()
	case attribute.FLOAT64:
		return "double", v.AsFloat64()
	case attribute.STRINGSLICE:
		return "strings", v.AsStringSlice()
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE:
		return "string", v.Emit()
	default:
		return "string", v.AsString()
	}
}
