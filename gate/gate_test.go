package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// newGate opens the gate of a fresh project: an issuer key, the default
// policy, or the given policy files (name, source) instead, and the given
// config.json when not "".
func newGate(t *testing.T, edits ...func(s *store.Store)) *gate.Gate {
	t.Helper()
	return openGate(t, gate.Options{Home: "/nonexistent/home"}, edits...)
}

// openGate is newGate with options.
func openGate(t *testing.T, o gate.Options, edits ...func(s *store.Store)) *gate.Gate {
	t.Helper()
	s := store.Open(t.TempDir())
	writeFile(t, filepath.Join(s.PolicyDir(), policy.DefaultName), policy.Default)
	_, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(s.KeyPath(), kf); err != nil {
		t.Fatal(err)
	}
	for _, edit := range edits {
		edit(s)
	}
	g, err := gate.Open(t.Context(), s.Project(), o)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	// The policy loads in the background and may write the store's
	// validation stamp: let it finish before the directory is removed.
	t.Cleanup(func() { g.PolicyError(context.Background()) })
	return g
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// bash is a Claude Code Bash call run in the gate's project.
func bash(g *gate.Gate, id, cmd string) gate.Call {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return gate.Call{SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: id, ToolInputHash: "sha256:" + cmd,
		Requests: []policy.Call{{Agent: "claude", ToolName: "Bash", ToolInput: in, Cwd: g.Store().Project()}}}
}

// payloads verifies the session chain and returns its payloads.
func payloads(t *testing.T, g *gate.Gate) []receipts.Payload {
	t.Helper()
	lines, err := g.Store().Receipts("s")
	if err != nil {
		t.Fatal(err)
	}
	pub := g.PublicKey()
	out := make([]receipts.Payload, len(lines))
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(pub), SessionID: "s"}) {
		var env struct{ Payload receipts.Payload }
		if err := json.Unmarshal(lines[i], &env); err != nil {
			t.Fatal(err)
		}
		out[i] = env.Payload
		if r.Outcome != receipts.Valid {
			t.Logf("receipt %d: %v %s: %s", i+1, r.Outcome, r.Cause, r.Detail)
			out[i].Reason = "verify:" + r.Cause
		}
	}
	return out
}

func TestDecideAndRecord(t *testing.T) {
	g := newGate(t)
	ctx := t.Context()
	d, err := g.Decide(ctx, bash(g, "t1", "go test ./..."))
	if err != nil || d.Decision.Decision != policy.Allow || d.Sequence != 1 || d.PolicyDigest != g.Engine().Digest() || len(d.Receipt) == 0 {
		t.Fatalf("Decide(go test) = %+v, %v; want an allow recorded at 1", d, err)
	}
	if d, err := g.Decide(ctx, bash(g, "t2", "ls; rm -rf /")); err != nil || d.Decision.Decision != policy.Deny || d.Sequence != 2 {
		t.Fatalf("Decide(rm -rf /) = %+v, %v; want a deny recorded at 2", d, err)
	}
	r, err := g.Record(t.Context(), gate.Event{HookEvent: receipts.PostToolUse, SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: "t1", ToolOutputHash: "sha256:out"})
	if err != nil || r.Unlinked || r.Sequence != 3 {
		t.Fatalf("Record(execution of t1) = %+v, %v; want linked at 3", r, err)
	}
	// The denied call ran anyway: recorded, unlinked.
	r, err = g.Record(t.Context(), gate.Event{HookEvent: receipts.PostToolUse, SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: "t2"})
	if err != nil || !r.Unlinked {
		t.Fatalf("Record(execution of denied t2) = %+v, %v; want unlinked", r, err)
	}
	if _, err := g.Record(t.Context(), gate.Event{HookEvent: receipts.SessionEnd, SessionID: "s", Agent: "claude-code"}); err != nil {
		t.Fatal(err)
	}
	pl := payloads(t, g)
	if len(pl) != 5 {
		t.Fatalf("chain holds %d receipts, want 5", len(pl))
	}
	if pl[2].DecisionReceiptHash == "" || pl[2].Decision != policy.Allow || pl[2].Reason != receipts.ReasonExecuted {
		t.Errorf("execution of t1 = %+v, want linked to the allow, reason executed", pl[2])
	}
	if pl[3].Reason != "verify:"+receipts.CauseUnlinkedExec || pl[3].DecisionReceiptHash != "" {
		t.Errorf("execution of t2 = %+v, want unlinked, and invalid to the verifier", pl[3])
	}
	if pl[4].Type != receipts.TypeLifecycle || pl[4].LifecycleEvent != receipts.LifecycleSessionEnd {
		t.Errorf("session end = %+v", pl[4])
	}
}

// An execution whose call (same tool_use_id) names another tool than its
// decision does not execute it: the gate leaves it unlinked rather than
// write a link the verifier refuses.
func TestRecordOtherTool(t *testing.T) {
	g := newGate(t)
	if _, err := g.Decide(t.Context(), bash(g, "t1", "go test ./...")); err != nil {
		t.Fatal(err)
	}
	r, err := g.Record(t.Context(), gate.Event{HookEvent: receipts.PostToolUseFailure, SessionID: "s", ToolName: "Write", ToolUseID: "t1"})
	if err != nil || !r.Unlinked {
		t.Fatalf("Record(Write as t1) = %+v, %v; want unlinked", r, err)
	}
}

// A gate whose policy did not load denies every call, and signs the deny.
func TestDecidePolicyError(t *testing.T) {
	g := newGate(t, func(s *store.Store) {
		writeFile(t, filepath.Join(s.PolicyDir(), "x.cedar"), []byte("permit (principal, action, resource) when { parse error"))
	})
	d, err := g.Decide(t.Context(), bash(g, "t1", "go test ./..."))
	if err != nil || d.Decision.Decision != policy.Deny || d.Reason != policy.ReasonGateError || d.PolicyDigest != "" || d.Sequence != 1 {
		t.Fatalf("Decide with a broken policy = %+v, %v; want a recorded gate_error deny", d, err)
	}
}

// A call whose context ended is not recorded, and so not allowed.
func TestDecideCanceled(t *testing.T) {
	g := newGate(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if d, err := g.Decide(ctx, bash(g, "t1", "go test ./...")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide after cancel = %+v, %v; want context.Canceled", d, err)
	}
	if head, err := g.Store().Head("s"); err != nil || head.Sequence != 0 {
		t.Fatalf("head after a canceled Decide = %+v, %v; want an empty chain", head, err)
	}
}

func TestEvaluateStrictest(t *testing.T) {
	g := newGate(t)
	c := bash(g, "", "go test ./...")
	c.Requests = append(c.Requests, bash(g, "", "git push origin main").Requests...)
	if d := gate.Evaluate(t.Context(), g.Engine(), c.Requests, g.Store().Project(), g.Home()); d.Decision != policy.RequireApproval {
		t.Errorf("Evaluate(allow, ask) = %s, want require_approval", d.Decision)
	}
	if d := gate.Evaluate(t.Context(), g.Engine(), nil, g.Store().Project(), g.Home()); d.Decision != policy.Deny || d.Reason != policy.ReasonGateError {
		t.Errorf("Evaluate(no requests) = %s %s, want deny gate_error", d.Decision, d.Reason)
	}
}

// An execution given the decision it executes (as an MCP relay holds it)
// links that decision without reading the chain back, also when many
// decisions came after it.
func TestRecordWithDecision(t *testing.T) {
	g := newGate(t)
	ctx := t.Context()
	first, err := g.Decide(ctx, bash(g, "t0", "go test ./..."))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // more than the 64 KiB tail the search reads first
		if _, err := g.Decide(ctx, bash(g, fmt.Sprint("t", i+1), "go vet ./...")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := g.Record(t.Context(), gate.Event{HookEvent: receipts.PostToolUse, SessionID: "s", ToolName: "Bash", ToolUseID: "t0",
		ToolInputHash: "sha256:go test ./...", Decision: first.Pending("Bash")})
	if err != nil || r.Unlinked {
		t.Fatalf("Record with its decision = %+v, %v; want linked", r, err)
	}
	pl := payloads(t, g)
	if x := pl[len(pl)-1]; x.DecisionReceiptHash != receipts.ChainHash(first.Receipt) || strings.HasPrefix(x.Reason, "verify:") {
		t.Fatalf("execution = %+v, want linked to the first decision and valid", x)
	}
}

// In strict mode an allow that cannot reach the log is refused and the
// refusal signed, for every caller of the gate (the hooks and the MCP
// relay alike); a deny does not wait for the log.
func TestDecideRequireLog(t *testing.T) {
	// require_log without a log: no log can take the allow. (The
	// configuration does not validate; one that cannot be read turns the
	// strict mode on.)
	g := openGate(t, gate.Options{Caller: "MCP relay"}, func(s *store.Store) {
		writeFile(t, s.ConfigPath(), []byte(`{"require_log":true}`))
	})
	d, err := g.Decide(t.Context(), bash(g, "t1", "go test ./...")) // no log configured: it cannot be published
	if err != nil || d.Decision.Decision != policy.Deny || d.Reason != gate.ReasonLogUnavailable ||
		!strings.Contains(d.Message, "before the MCP relay's deadline") {
		t.Fatalf("Decide(allowed call, log unreachable) = %+v, %v; want a deny for log_unavailable", d, err)
	}
	if d, err := g.Decide(t.Context(), bash(g, "t2", "rm -rf /")); err != nil || d.Reason == gate.ReasonLogUnavailable {
		t.Fatalf("Decide(denied call) = %+v, %v; want the policy's deny", d, err)
	}
	pl := payloads(t, g)
	if len(pl) != 3 || pl[0].Decision != policy.Allow || pl[1].Reason != gate.ReasonLogUnavailable || len(pl[1].PolicyIDs) != 0 {
		t.Fatalf("chain %+v, want the allow, its refusal, the deny", pl)
	}
}

// Open fails when nothing could be signed: no issuer key, or a key file
// others can read; a ctx that ended first is its error too.
func TestOpenErrors(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		edit func(t *testing.T, s *store.Store)
		want string
	}{
		{"no key", t.Context(), func(t *testing.T, s *store.Store) { os.Remove(s.KeyPath()) }, "issuer key"},
		{"key readable by others", t.Context(), func(t *testing.T, s *store.Store) { os.Chmod(s.KeyPath(), 0o644) }, "issuer key"},
		{"canceled", canceled, func(*testing.T, *store.Store) {}, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newGate(t).Store().Project()
			tt.edit(t, store.Open(dir))
			g, err := gate.Open(tt.ctx, dir, gate.Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open = %v, %v; want an error naming %q", g, err, tt.want)
			}
		})
	}
}

// Preview evaluates as Decide does and records nothing; with a policy that
// did not load it denies.
func TestPreview(t *testing.T) {
	g := newGate(t)
	for _, tt := range []struct{ name, cmd, want string }{
		{"allowed", "go test ./...", policy.Allow},
		{"denied", "rm -rf /", policy.Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := g.Preview(t.Context(), bash(g, "", tt.cmd).Requests); d.Decision != tt.want {
				t.Errorf("Preview(%s) = %s, want %s", tt.cmd, d.Decision, tt.want)
			}
		})
	}
	if head, err := g.Store().Head("s"); err != nil || head.Sequence != 0 {
		t.Fatalf("head after Preview = %+v, %v; want an empty chain", head, err)
	}
	broken := newGate(t, func(s *store.Store) {
		writeFile(t, filepath.Join(s.PolicyDir(), "x.cedar"), []byte("permit (principal, action, resource) when {"))
	})
	if d := broken.Preview(t.Context(), bash(broken, "", "go test ./...").Requests); d.Decision != policy.Deny || d.Reason != policy.ReasonGateError {
		t.Fatalf("Preview with a broken policy = %s %s, want deny gate_error", d.Decision, d.Reason)
	}
}
