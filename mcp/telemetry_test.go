package mcp_test

import (
	"testing"

	"github.com/docketlog/docket/internal/otelcoltest"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/telemetry"
)

// TestRelaySpans: every way a tools/call ends gives its one span, seen by
// a real OpenTelemetry Collector: run, denied, failed (isError), cancelled
// by the client, and ended by the server's exit; with the decision
// receipt's hash and, for a call that ran, the execution's.
func TestRelaySpans(t *testing.T) {
	col := otelcoltest.Start(t)
	tel, err := telemetry.FromEnv(func(k string) (string, bool) {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return col.Endpoint, true
		}
		return "", false
	}, "docket", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, noWrite)
	s := start(t, g, func(c *mcp.Config) { c.Telemetry = tel })
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	s.recv()
	s.send(call(1, "echo", map[string]any{"x": "y"}))
	s.recv()
	s.send(call(2, "write", map[string]any{"path": "/nonexistent/x", "content": "x"}))
	s.recv()
	s.send(call(3, "fail", map[string]any{}))
	s.recv()
	s.send(call(4, "hang", map[string]any{}))
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"user"}}`)
	s.send(call(5, "hang", map[string]any{}))
	s.send(call(6, "exit", map[string]any{}))
	if r := <-s.done; r.code != 3 {
		t.Fatalf("Run = %d, %v; want the server's exit code 3", r.code, r.err)
	}
	if err := tel.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans, err := col.Spans(t.Context(), 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 6 {
		t.Fatalf("the collector received %d spans, want 6 (one per tools/call)", len(spans))
	}
	decisions, executions := map[string]bool{}, map[string]bool{}
	recs, err := g.Store().Receipts("s")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		rc, err := receipts.Open(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch rc.Payload.HookEvent {
		case receipts.PreToolUse:
			decisions[rc.Hash] = true
		case receipts.PostToolUse, receipts.PostToolUseFailure:
			executions[rc.Hash] = true
		}
	}
	want := map[string]struct {
		tool, decision, errorType string
		ran                       bool
	}{
		"1": {"echo", "allow", "", true},
		"2": {"write", "deny", "tool_error", false},
		"3": {"fail", "allow", "tool_error", true},
		"4": {"hang", "allow", receipts.ReasonCancelled, true},
		"5": {"hang", "allow", receipts.ReasonServerExited, true},
		"6": {"exit", "allow", receipts.ReasonServerExited, true},
	}
	for _, sp := range spans {
		id, _ := sp.Attrs["jsonrpc.request.id"].(string)
		w, ok := want[id]
		if !ok {
			t.Errorf("span %s: jsonrpc.request.id %q is no call's", sp.Name, id)
			continue
		}
		delete(want, id)
		errType, _ := sp.Attrs["error.type"].(string)
		if sp.Name != "tools/call "+w.tool || sp.Attrs["docket.decision"] != w.decision || errType != w.errorType {
			t.Errorf("call %s: span %q decision %v error.type %q, want %q %s %q", id, sp.Name, sp.Attrs["docket.decision"], errType, "tools/call "+w.tool, w.decision, w.errorType)
		}
		if (errType != "") != (sp.StatusCode == 2) {
			t.Errorf("call %s: status %d with error.type %q, want ERROR (2) exactly when error.type is set", id, sp.StatusCode, errType)
		}
		if h, _ := sp.Attrs["docket.receipt.hash"].(string); !decisions[h] {
			t.Errorf("call %s: docket.receipt.hash %q is no decision receipt of the chain", id, h)
		}
		h, _ := sp.Attrs["docket.execution.receipt.hash"].(string)
		if w.ran != executions[h] {
			t.Errorf("call %s: docket.execution.receipt.hash %q, want an execution receipt of the chain: %v", id, h, w.ran)
		}
		if sp.Attrs["mcp.protocol.version"] != "2025-11-25" {
			t.Errorf("call %s: mcp.protocol.version %v, want the initialize result's 2025-11-25", id, sp.Attrs["mcp.protocol.version"])
		}
		if sp.Attrs["mcp.session.id"] != "s" || sp.Attrs["gen_ai.tool.call.id"] != "jsonrpc:"+id {
			t.Errorf("call %s: mcp.session.id %v, gen_ai.tool.call.id %v, want s, jsonrpc:%s", id, sp.Attrs["mcp.session.id"], sp.Attrs["gen_ai.tool.call.id"], id)
		}
	}
}
