package telemetry

import (
	"strings"
	"testing"
)

// FuzzParseHeaders: OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES
// never crash the parser, and what it accepts has non-empty keys without
// spaces around them.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"", "a=b", "api-key=a%20b, x-tenant = t1 ,", "novalue", "=v", "k=%zz", "k=v=w", ",,,", "k=\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders(s)
		if err != nil {
			return
		}
		for k := range h {
			if k == "" || strings.TrimSpace(k) != k {
				t.Errorf("parseHeaders(%q) key %q", s, k)
			}
		}
	})
}

// FuzzCallsAdd: any bytes handed to Calls as a proven receipt are read or
// ignored, and a flush of what was read never crashes.
func FuzzCallsAdd(f *testing.F) {
	for _, s := range []string{"", "{}", "null", `{"payload":{"tool_name":"Bash","hook_event":"PreToolUse","decision":"deny","issued_at":"x"}}`,
		`{"payload":{"tool_name":"Bash","hook_event":"PostToolUse","decision_receipt_hash":"sha256:00","hook_latency_ms":-5}}`,
		`{"payload":{"tool_name":"Bash","hook_event":"PreToolUse","decision":"allow","enforced":false}}`} {
		f.Add([]byte(s))
	}
	e, _ := memExporter()
	f.Fuzz(func(t *testing.T, b []byte) {
		c := e.Calls()
		c.Add(b, 1)
		c.Flush(func(string, string) []byte { return b })
	})
}
