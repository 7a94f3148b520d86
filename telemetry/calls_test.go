package telemetry

import (
	"encoding/json"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/docketlog/docket/receipts"
)

// memExporter is an Exporter whose spans end in memory.
func memExporter() (*Exporter, *tracetest.InMemoryExporter) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	return &Exporter{tp: tp, tracer: tp.Tracer(ScopeName)}, mem
}

// receipt is a receipt with payload p (its signature is not checked here).
func receipt(t *testing.T, p map[string]any) []byte {
	t.Helper()
	p["type"], p["spec"], p["issuer_id"] = "protectmcp:decision", "draft-farley-acta-signed-receipts-04", "sb:issuer:abc"
	if _, ok := p["issued_at"]; !ok {
		p["issued_at"] = "2026-11-26T12:00:00.000Z"
	}
	b, err := json.Marshal(map[string]any{"payload": p, "signature": map[string]any{"alg": "EdDSA", "kid": "sb:issuer:abc", "sig": "00"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashOf(t *testing.T, r []byte) string {
	h, err := receipts.Hash(r)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func attrsOf(s tracetest.SpanStub) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestCalls(t *testing.T) {
	allow := receipt(t, map[string]any{"session_id": "s", "sequence": 2, "hook_event": "PreToolUse", "agent": "claude-code",
		"tool_name": "Bash", "tool_use_id": "toolu_1", "decision": "allow", "reason": "cedar_allow", "policy_ids": []string{"bash-ls"},
		"hook_latency_ms": 4})
	exec := receipt(t, map[string]any{"session_id": "s", "sequence": 3, "hook_event": "PostToolUse", "agent": "claude-code",
		"tool_name": "Bash", "tool_use_id": "toolu_1", "decision": "allow", "decision_receipt_hash": hashOf(t, allow),
		"issued_at": "2026-11-26T12:00:02.500Z"})
	deny := receipt(t, map[string]any{"session_id": "s", "sequence": 4, "hook_event": "PreToolUse", "agent": "claude-code",
		"tool_name": "Bash", "tool_use_id": "toolu_2", "decision": "deny", "reason": "cedar_deny", "policy_ids": []string{"no-rm"}})
	allow2 := receipt(t, map[string]any{"session_id": "s", "sequence": 5, "hook_event": "PreToolUse", "agent": "claude-code",
		"tool_name": "Read", "tool_use_id": "toolu_3", "decision": "allow", "policy_ids": []string{"read-project"}})
	exec2 := receipt(t, map[string]any{"session_id": "s", "sequence": 6, "hook_event": "PostToolUseFailure", "agent": "claude-code",
		"tool_name": "Read", "tool_use_id": "toolu_3", "decision": "allow", "decision_receipt_hash": hashOf(t, allow2)})
	unenforced := receipt(t, map[string]any{"session_id": "s", "sequence": 7, "hook_event": "PreToolUse", "agent": "claude-code",
		"tool_name": "Bash", "tool_use_id": "toolu_4", "decision": "deny", "enforced": false})
	relay := receipt(t, map[string]any{"session_id": "m", "sequence": 2, "hook_event": "PreToolUse", "agent": "mcp",
		"tool_name": "mcp__notes__save", "tool_use_id": "jsonrpc:1", "decision": "deny"})
	start := receipt(t, map[string]any{"session_id": "s", "sequence": 1, "hook_event": "SessionStart", "lifecycle_event": "session_start"})

	e, mem := memExporter()
	// The first run proves all but exec2; the second exec2, whose
	// decision it finds in the chain.
	run1 := e.Calls()
	for i, r := range [][]byte{start, allow, exec, deny, allow2, unenforced, relay} {
		run1.Add(r, uint64(10+i))
	}
	run1.Flush(nil)
	spans := mem.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("first run: %d spans, want 2 (the executed allow and the deny): %v", len(spans), spans)
	}
	ran, denied := attrsOf(spans[0]), attrsOf(spans[1])
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"ran tool", ran["gen_ai.tool.name"].AsString(), "Bash"},
		{"ran call id", ran["gen_ai.tool.call.id"].AsString(), "toolu_1"},
		{"ran conversation", ran["gen_ai.conversation.id"].AsString(), "s"},
		{"ran policy ids", ran["docket.policy_ids"].AsStringSlice(), []string{"bash-ls"}},
		{"ran receipt", ran["docket.receipt.hash"].AsString(), hashOf(t, allow)},
		{"ran index", ran["docket.log.index"].AsInt64(), int64(11)},
		{"ran execution", ran["docket.execution.receipt.hash"].AsString(), hashOf(t, exec)},
		{"ran execution index", ran["docket.execution.log.index"].AsInt64(), int64(12)},
		{"ran error", ran["error.type"].Type(), attribute.INVALID},
		{"ran name", spans[0].Name, "execute_tool Bash"},
		{"ran duration", spans[0].EndTime.Sub(spans[0].StartTime).Milliseconds(), int64(2500)},
		{"denied decision", denied["docket.decision"].AsString(), "deny"},
		{"denied policy", denied["docket.policy_ids"].AsStringSlice(), []string{"no-rm"}},
		{"denied error", denied["error.type"].AsString(), "tool_error"},
		{"denied index", denied["docket.log.index"].AsInt64(), int64(13)},
		{"denied no execution", denied["docket.execution.receipt.hash"].Type(), attribute.INVALID},
	} {
		if s, ok := c.want.([]string); ok {
			if !slices.Equal(c.got.([]string), s) {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
			continue
		}
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	mem.Reset()
	run2 := e.Calls()
	run2.Add(exec2, 20)
	lookups := 0
	run2.Flush(func(session, hash string) []byte {
		lookups++
		if session == "s" && hash == hashOf(t, allow2) {
			return allow2
		}
		return nil
	})
	spans = mem.GetSpans()
	if len(spans) != 1 || lookups != 1 {
		t.Fatalf("second run: %d spans after %d lookups, want 1 after 1", len(spans), lookups)
	}
	a := attrsOf(spans[0])
	if got := a["docket.policy_ids"].AsStringSlice(); !slices.Equal(got, []string{"read-project"}) {
		t.Errorf("policy ids from the chain = %v, want [read-project]", got)
	}
	if a["docket.log.index"].Type() != attribute.INVALID || a["docket.execution.log.index"].AsInt64() != 20 {
		t.Errorf("indexes = %v, %v, want none for the decision (proven earlier) and 20", a["docket.log.index"], a["docket.execution.log.index"])
	}
	if a["error.type"].AsString() != "tool_error" {
		t.Errorf("error.type of a PostToolUseFailure = %v, want tool_error", a["error.type"])
	}

	var nilCalls *Calls
	nilCalls.Add(allow, 1) // a nil Calls (no exporter) ignores everything
	nilCalls.Flush(nil)
}
