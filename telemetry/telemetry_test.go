package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/docketlog/docket/internal/otelcoltest"
)

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		off      bool   // nil Exporter, no error
		err      string // an error containing this
		endpoint string
		json     bool
	}{
		{name: "nothing set", env: map[string]string{}, off: true},
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, endpoint: "http://c:4318/v1/traces"},
		{name: "base endpoint with slash", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, endpoint: "http://c:4318/v1/traces"},
		{name: "traces endpoint as is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t:443/custom"}, endpoint: "https://t:443/custom"},
		{name: "disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, off: true},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, off: true},
		{name: "exporter zipkin", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, err: "otlp only"},
		{name: "json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, endpoint: "http://c:4318/v1/traces", json: true},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, endpoint: "http://c:4318/v1/traces"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: "http/protobuf and http/json only"},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, err: "want an http or https URL"},
		{name: "bad header", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, err: "key=value"},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, err: "milliseconds"},
		{name: "bad compression", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: "gzip or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := FromEnv(envOf(tt.env), "docket", nil)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("FromEnv = %v, want an error with %q", err, tt.err)
				}
				return
			case err != nil:
				t.Fatalf("FromEnv = %v", err)
			case tt.off:
				if e != nil {
					t.Fatalf("FromEnv = an exporter, want none")
				}
				return
			case e == nil:
				t.Fatal("FromEnv = nil, want an exporter")
			}
			defer e.Shutdown(t.Context())
			if e.exp.cfg.endpoint != tt.endpoint || e.exp.cfg.json != tt.json {
				t.Errorf("FromEnv endpoint, json = %s, %v, want %s, %v", e.exp.cfg.endpoint, e.exp.cfg.json, tt.endpoint, tt.json)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := parseHeaders("api-key=a%20b, x-tenant = t1 ,")
	if err != nil {
		t.Fatal(err)
	}
	if h["api-key"] != "a b" || h["x-tenant"] != "t1" || len(h) != 2 {
		t.Errorf("parseHeaders = %v, want api-key 'a b' and x-tenant t1", h)
	}
}

// toolCall is a call with every attribute set.
func toolCall() ToolCall {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	return ToolCall{Tool: "save_note", DocketTool: "mcp__notes__save_note", CallID: "jsonrpc:7", Agent: "mcp",
		Session: "s1", Method: "tools/call", RequestID: "7", Server: "notes", Protocol: "2025-11-25", Relay: true,
		Decision: "deny", Reason: "cedar_deny", PolicyIDs: []string{"p1", "p2"}, Unenforced: true,
		Receipt: "sha256:aa", Index: 0, Execution: "sha256:bb", ExecutionIndex: 12,
		ErrorType: "tool_error", ErrorMessage: "denied by Docket: cedar_deny", Start: start, End: start.Add(1500 * time.Millisecond)}
}

// TestExportToCollector sends a span in each protocol the exporter speaks
// to a real OpenTelemetry Collector and reads back what it received.
func TestExportToCollector(t *testing.T) {
	col := otelcoltest.Start(t)
	protos := []struct{ name, protocol, compression string }{
		{"protobuf", "http/protobuf", ""},
		{"json", "http/json", ""},
		{"protobuf gzip", "", "gzip"},
		{"json gzip", "http/json", "gzip"},
	}
	for i, p := range protos {
		e, err := FromEnv(envOf(map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":    col.Endpoint,
			"OTEL_EXPORTER_OTLP_PROTOCOL":    p.protocol,
			"OTEL_EXPORTER_OTLP_COMPRESSION": p.compression,
			"OTEL_EXPORTER_OTLP_HEADERS":     "x-docket-test=1",
			"OTEL_SERVICE_NAME":              "docket-" + strings.ReplaceAll(p.name, " ", "-"),
		}), "docket", nil)
		if err != nil {
			t.Fatal(err)
		}
		c := toolCall()
		c.RequestID = p.name
		e.Record(c)
		if err := e.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		spans, err := col.Spans(t.Context(), i+1)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(spans, func(s otelcoltest.Span) bool { return s.Attrs["jsonrpc.request.id"] == p.name })
		if i < 0 {
			t.Fatalf("%s: the collector has no span with jsonrpc.request.id %q: %+v", p.name, p.name, spans)
		}
		s := spans[i]
		t.Run(p.name, func(t *testing.T) {
			want := map[string]any{
				"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "save_note", "gen_ai.tool.call.id": "jsonrpc:7",
				"gen_ai.agent.name": "mcp", "mcp.method.name": "tools/call", "jsonrpc.request.id": p.name,
				"mcp.session.id": "s1", "network.transport": "pipe", "error.type": "tool_error", "mcp.protocol.version": "2025-11-25",
				"docket.session.id": "s1", "docket.tool.name": "mcp__notes__save_note", "docket.mcp.server": "notes",
				"docket.decision": "deny", "docket.reason": "cedar_deny", "docket.policy_ids": []any{"p1", "p2"},
				"docket.enforced": false, "docket.receipt.hash": "sha256:aa", "docket.log.index": int64(0),
				"docket.execution.receipt.hash": "sha256:bb", "docket.execution.log.index": int64(12),
			}
			for k, v := range want {
				if got := s.Attrs[k]; !equal(got, v) {
					t.Errorf("attribute %s = %#v, want %#v", k, got, v)
				}
			}
			if len(s.Attrs) != len(want) {
				t.Errorf("attributes = %v, want exactly %v", s.Attrs, want)
			}
			if s.Name != "tools/call save_note" || s.Kind != 3 {
				t.Errorf("span name, kind = %q, %d, want %q, 3 (CLIENT)", s.Name, s.Kind, "tools/call save_note")
			}
			if s.StatusCode != 2 || s.StatusMessage != "denied by Docket: cedar_deny" {
				t.Errorf("status = %d %q, want 2 (ERROR) %q", s.StatusCode, s.StatusMessage, "denied by Docket: cedar_deny")
			}
			if !s.Start.Equal(c.Start) || !s.End.Equal(c.End) {
				t.Errorf("span times = %v – %v, want %v – %v", s.Start, s.End, c.Start, c.End)
			}
			if got, want := s.Resource["service.name"], "docket-"+strings.ReplaceAll(p.name, " ", "-"); got != want {
				t.Errorf("service.name = %v, want %v", got, want)
			}
			if len(s.TraceID) != 32 || len(s.SpanID) != 16 {
				t.Errorf("trace, span id = %q, %q, want 32 and 16 hex digits", s.TraceID, s.SpanID)
			}
		})
	}
}

func equal(a, b any) bool {
	as, ok1 := a.([]any)
	bs, ok2 := b.([]any)
	if ok1 && ok2 {
		return slices.Equal(as, bs)
	}
	return a == b
}

// TestServiceNameDefault: without OTEL_SERVICE_NAME the resource names
// the service FromEnv was given; OTEL_RESOURCE_ATTRIBUTES overrides it.
func TestServiceNameDefault(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"default", map[string]string{}, "docket"},
		{"resource attributes", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=ci,team=x"}, "ci"},
		{"service name wins", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=ci", "OTEL_SERVICE_NAME": "svc"}, "svc"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
			e, err := FromEnv(envOf(tt.env), "docket", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(t.Context())
			mem := tracetest.NewInMemoryExporter()
			e.tp.RegisterSpanProcessor(sdktrace.NewSimpleSpanProcessor(mem))
			e.Record(toolCall())
			spans := mem.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("spans = %d, want 1", len(spans))
			}
			var got string
			for _, kv := range spans[0].Resource.Attributes() {
				if kv.Key == "service.name" {
					got = kv.Value.AsString()
				}
			}
			if got != tt.want {
				t.Errorf("service.name = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestExportFailure: an endpoint that refuses connections, or answers
// 500, is logged once however many exports fail, and never an error to
// the SDK; an endpoint that never answers holds Shutdown only as long as
// its context.
func TestExportFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/v1/traces"
	l.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer failing.Close()
	for _, endpoint := range []string{refused, failing.URL + "/v1/traces"} {
		var logs bytes.Buffer
		exp := newSpanExporter(exporterConfig{endpoint: endpoint, timeout: 5 * time.Second, logger: slog.New(slog.NewTextHandler(&logs, nil))})
		spans := tracetest.SpanStubs{{Name: "execute_tool Bash"}}.Snapshots()
		for range 3 {
			if err := exp.ExportSpans(t.Context(), spans); err != nil {
				t.Errorf("ExportSpans(%s) = %v, want nil (failures are logged, not returned)", endpoint, err)
			}
		}
		if n := strings.Count(logs.String(), "OpenTelemetry export failed"); n != 1 {
			t.Errorf("failure log lines for %s = %d, want 1:\n%s", endpoint, n, logs.String())
		}
	}

	block := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer hung.Close()
	defer close(block)
	e, err := FromEnv(envOf(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": hung.URL}), "docket", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Record(toolCall())
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	// Returns once ctx ends, whatever the endpoint does.
	_ = e.Shutdown(ctx)
	if ctx.Err() == nil {
		t.Errorf("Shutdown returned before its context ended, with the export still unanswered")
	}
}
