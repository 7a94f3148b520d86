// Package telemetry exports Docket's tool calls as OpenTelemetry spans over
// OTLP/HTTP, configured by the standard OTEL_* environment variables
// (OpenTelemetry specification, "OTLP Exporter Configuration" and
// "Environment Variable Specification").
//
// One span per tool call, with the GenAI semantic conventions' execute_tool
// attributes (gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id)
// and, for calls through the MCP relay, the MCP conventions' (mcp.method.name,
// mcp.session.id, jsonrpc.request.id, network.transport), plus Docket's own:
// the decision, its reason, the policy ids, the receipt hashes, the session
// and, once proven, the log's leaf index.
//
// Spans go through the OpenTelemetry Go SDK (a batch span processor) to
// this package's own SpanExporter, which encodes the OTLP
// ExportTraceServiceRequest itself, as binary protobuf (http/protobuf, the
// default) or JSON (http/json). The official OTLP exporters link gRPC and
// the protobuf runtime, whose package initialisation (descriptor
// registration, the protobuf runtime reading its own executable) would run
// in every docket process, the pre hook's included: see docs/mcp.md.
//
// Nothing here runs unless [FromEnv] finds an endpoint: the pre hook never
// calls it. Export failures never fail a tool call; they are logged once,
// and [Exporter.Shutdown] bounds the flush at exit.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Docket's spans.
const ScopeName = "github.com/docketlog/docket"

// Env looks up an environment variable; os.LookupEnv is the real one.
type Env func(string) (string, bool)

// Exporter records tool calls as spans and exports them. Its methods are
// safe for concurrent use; a nil *Exporter records nothing.
type Exporter struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	exp    *spanExporter
}

// FromEnv returns an Exporter configured by the OTEL_* variables, or nil
// when none is wanted: no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER=none. service is the default service.name
// (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES take precedence). A
// configuration it cannot honour (a gRPC protocol, a malformed endpoint or
// header) is an error, and nothing is exported. logger receives the first
// export failure; nil discards.
func FromEnv(env Env, service string, logger *slog.Logger) (*Exporter, error) {
	if env == nil {
		env = os.LookupEnv
	}
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := env(n); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	if ex := get("OTEL_TRACES_EXPORTER"); ex != "" {
		switch strings.ToLower(ex) {
		case "none":
			return nil, nil
		case "otlp":
		default:
			return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: docket exports otlp only", ex)
		}
	}
	endpoint := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		base := get("OTEL_EXPORTER_OTLP_ENDPOINT")
		if base == "" {
			return nil, nil
		}
		// The signal-independent endpoint is a base URL: the signal's
		// path is appended to it (the spec's "v1/traces").
		endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http or https URL", endpoint)
	}
	cfg := exporterConfig{endpoint: u.String(), timeout: 10 * time.Second, logger: logger}
	switch p := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p {
	case "", "http/protobuf":
	case "http/json":
		cfg.json = true
	default:
		return nil, fmt.Errorf("OTLP protocol %q: docket exports http/protobuf and http/json only", p)
	}
	if h := get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"); h != "" {
		if cfg.headers, err = parseHeaders(h); err != nil {
			return nil, err
		}
	}
	if t := get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTLP timeout %q: want milliseconds", t)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	switch c := get("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"); c {
	case "", "none":
	case "gzip":
		cfg.gzip = true
	default:
		return nil, fmt.Errorf("OTLP compression %q: want gzip or none", c)
	}
	// The resource: OTEL_RESOURCE_ATTRIBUTES (the same key=value list as
	// the headers), service.name the given default unless
	// OTEL_SERVICE_NAME or those attributes name it.
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if ra := get("OTEL_RESOURCE_ATTRIBUTES"); ra != "" {
		kv, err := parseHeaders(ra)
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
		}
		for k, v := range kv {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	if sn := get("OTEL_SERVICE_NAME"); sn != "" {
		attrs = append(attrs, attribute.String("service.name", sn))
	}
	// Later attributes of a key replace earlier ones.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	exp := newSpanExporter(cfg)
	// The batch processor reads OTEL_BSP_*; the provider OTEL_TRACES_SAMPLER.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Exporter{tp: tp, tracer: tp.Tracer(ScopeName), exp: exp}, nil
}

// parseHeaders reads the W3C-baggage-like list the spec defines for
// OTEL_EXPORTER_OTLP_HEADERS: key=value pairs, comma separated, values
// percent-encoded.
func parseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("OTLP headers: want key=value pairs separated by commas")
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTLP header %s: %w", k, err)
		}
		h[k] = dv
	}
	return h, nil
}

// Shutdown exports what is buffered and stops, waiting at most until ctx
// ends; what could not be sent by then is dropped.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	return e.tp.Shutdown(ctx)
}

// ToolCall is one tool call as a span describes it.
type ToolCall struct {
	// Tool is gen_ai.tool.name: the name the tool is called by (for an
	// MCP call, as the server names it).
	Tool string
	// DocketTool is the tool name the policy decided and the receipt
	// holds (mcp__SERVER__TOOL for an MCP call), when it differs from Tool.
	DocketTool string
	// CallID is gen_ai.tool.call.id, the agent's id of the call.
	CallID string
	// Agent is the agent whose call it was (the receipts' agent).
	Agent string
	// Session is the receipt chain (docket.session.id).
	Session string

	// MCP: the JSON-RPC method (mcp.method.name), request id
	// (jsonrpc.request.id, as the client sent it), the MCP server's name
	// (docket.mcp.server), the protocol version, and whether the span is the relay's (kind
	// CLIENT, mcp.session.id and network.transport pipe).
	Method, RequestID, Server string
	// Protocol is mcp.protocol.version, when known.
	Protocol string
	Relay    bool

	// The decision: allow, deny or require_approval, its reason, the
	// policies that made it, and whether it was enforced (false in
	// observe mode).
	Decision, Reason string
	PolicyIDs        []string
	Unenforced       bool
	// Receipt is the decision receipt's hash; Index its leaf index in the
	// log once proven (-1: not known).
	Receipt string
	Index   int64
	// Execution is the execution receipt's hash and ExecutionIndex its
	// leaf index (-1: not known); empty for a call that did not run.
	Execution      string
	ExecutionIndex int64
	// ErrorType is error.type: "tool_error" for a call denied or failed,
	// a JSON-RPC error code, or "" when the call succeeded.
	ErrorType, ErrorMessage string

	Start, End time.Time
}

// Record records one tool call as a span: INTERNAL, named
// "execute_tool TOOL" (GenAI execute_tool span), or for the relay CLIENT,
// named "tools/call TOOL" (MCP client span).
func (e *Exporter) Record(c ToolCall) {
	if e == nil {
		return
	}
	name, kind := "execute_tool "+c.Tool, trace.SpanKindInternal
	if c.Relay {
		name, kind = c.Method+" "+c.Tool, trace.SpanKindClient
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Tool),
	}
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	num := func(k string, v int64) {
		if v >= 0 {
			attrs = append(attrs, attribute.Int64(k, v))
		}
	}
	str("gen_ai.tool.call.id", c.CallID)
	str("gen_ai.agent.name", c.Agent)
	str("mcp.method.name", c.Method)
	str("jsonrpc.request.id", c.RequestID)
	str("mcp.protocol.version", c.Protocol)
	if c.Relay {
		str("mcp.session.id", c.Session)
		str("network.transport", "pipe")
	} else {
		str("gen_ai.conversation.id", c.Session)
	}
	str("error.type", c.ErrorType)
	str("docket.session.id", c.Session)
	str("docket.tool.name", c.DocketTool)
	str("docket.mcp.server", c.Server)
	str("docket.decision", c.Decision)
	str("docket.reason", c.Reason)
	if c.PolicyIDs != nil {
		attrs = append(attrs, attribute.StringSlice("docket.policy_ids", c.PolicyIDs))
	}
	if c.Unenforced {
		attrs = append(attrs, attribute.Bool("docket.enforced", false))
	}
	str("docket.receipt.hash", c.Receipt)
	num("docket.log.index", c.Index)
	str("docket.execution.receipt.hash", c.Execution)
	num("docket.execution.log.index", c.ExecutionIndex)

	end := c.End
	if end.Before(c.Start) {
		end = c.Start
	}
	_, span := e.tracer.Start(context.Background(), name, trace.WithSpanKind(kind),
		trace.WithTimestamp(c.Start), trace.WithAttributes(attrs...))
	if c.ErrorType != "" {
		msg := c.ErrorMessage
		if msg == "" {
			msg = c.ErrorType
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End(trace.WithTimestamp(end))
}
