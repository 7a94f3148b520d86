// Package otelcoltest starts a real OpenTelemetry Collector for tests (the
// one .ci/deps/otel.sh builds: the OTLP receiver and the file exporter) and
// reads back the spans it received, from the file exporter's OTLP/JSON
// lines.
package otelcoltest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/docketlog/docket/internal/testproc"
)

// EnvVar names the collector binary.
const EnvVar = "DOCKET_OTELCOL"

// A Collector is a running collector.
type Collector struct {
	// Endpoint is its OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT).
	Endpoint string
	out      string
}

// Start starts the collector on a free loopback port and stops it when the
// test ends. It skips the test, naming the script that builds it, when
// DOCKET_OTELCOL is unset.
func Start(t testing.TB) *Collector {
	t.Helper()
	bin := os.Getenv(EnvVar)
	if bin == "" {
		t.Skip("no OpenTelemetry Collector: run `. .ci/deps/otel.sh` (it sets DOCKET_OTELCOL)")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := &Collector{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), out: filepath.Join(dir, "spans.jsonl")}
	config := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, port, c.out)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := testproc.Start(exec.Command(bin, "--config", cfg), filepath.Join(dir, "collector.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	// Ready once the receiver answers an empty export.
	err = p.Ready(func(ctx context.Context) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint+"/v1/traces", bytes.NewReader([]byte("{}")))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A Span is a span as the collector received it.
type Span struct {
	Name, TraceID, SpanID string
	Kind                  int
	Start, End            time.Time
	// Attrs are the span's attributes: string, bool, int64, float64 or
	// []any values.
	Attrs map[string]any
	// Resource holds the resource's attributes.
	Resource      map[string]any
	StatusCode    int
	StatusMessage string
}

// Spans waits until the collector has written at least n spans (or ctx
// ends) and returns all it wrote.
func (c *Collector) Spans(ctx context.Context, n int) ([]Span, error) {
	for {
		spans, err := c.read()
		if err != nil {
			return nil, err
		}
		if len(spans) >= n {
			return spans, nil
		}
		select {
		case <-ctx.Done():
			return spans, fmt.Errorf("the collector received %d spans, want %d: %w", len(spans), n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type anyValue struct {
	StringValue *string  `json:"stringValue"`
	BoolValue   *bool    `json:"boolValue"`
	IntValue    *string  `json:"intValue"`
	DoubleValue *float64 `json:"doubleValue"`
	ArrayValue  *struct {
		Values []anyValue `json:"values"`
	} `json:"arrayValue"`
}

func (v anyValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(*v.IntValue, 10, 64)
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		out := []any{}
		for _, e := range v.ArrayValue.Values {
			out = append(out, e.value())
		}
		return out
	}
	return nil
}

type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

func attrs(kvs []keyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.value()
	}
	return m
}

// read parses the file exporter's output: one OTLP/JSON
// ExportTraceServiceRequest per line.
func (c *Collector) read() ([]Span, error) {
	f, err := os.Open(c.out)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var spans []Span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []keyValue `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID    string     `json:"traceId"`
						SpanID     string     `json:"spanId"`
						Name       string     `json:"name"`
						Kind       int        `json:"kind"`
						Start      string     `json:"startTimeUnixNano"`
						End        string     `json:"endTimeUnixNano"`
						Attributes []keyValue `json:"attributes"`
						Status     struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			// The last line may be half written.
			break
		}
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					st, _ := strconv.ParseInt(s.Start, 10, 64)
					en, _ := strconv.ParseInt(s.End, 10, 64)
					spans = append(spans, Span{Name: s.Name, TraceID: s.TraceID, SpanID: s.SpanID, Kind: s.Kind,
						Start: time.Unix(0, st), End: time.Unix(0, en), Attrs: attrs(s.Attributes), Resource: res,
						StatusCode: s.Status.Code, StatusMessage: s.Status.Message})
				}
			}
		}
	}
	return spans, sc.Err()
}
