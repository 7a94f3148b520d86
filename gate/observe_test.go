package gate_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// observing configures observe mode (and the journal) in a project.
func observing(journal bool) func(*store.Store) {
	return func(s *store.Store) {
		if err := s.WriteConfig(store.Config{Observe: true, Journal: journal}); err != nil {
			panic(err)
		}
	}
}

func TestObserve(t *testing.T) {
	g := newGate(t, observing(false))
	refusal := bash(g, "t4", "ls")
	refusal.Refusal = &policy.Decision{Decision: policy.Deny, Reason: policy.ReasonInvalidInput, Message: "unreadable"}
	for _, tt := range []struct {
		name             string
		call             gate.Call
		decision, answer string
		unenforced       bool
	}{
		{"allow", bash(g, "t1", "go test ./..."), policy.Allow, policy.Allow, false},
		{"forbid", bash(g, "t2", "rm -rf /"), policy.Deny, policy.Allow, true},
		{"ask", bash(g, "t3", "terraform plan"), policy.RequireApproval, policy.Allow, true},
		{"refusal", refusal, policy.Deny, policy.Deny, false},
		{"unknown tool", gate.Call{SessionID: "s", Agent: "claude-code", ToolName: "Frobnicate", ToolUseID: "t5",
			ToolInputHash: "sha256:x", Requests: []policy.Call{{Agent: "claude", ToolName: "Frobnicate", ToolInput: json.RawMessage(`{}`),
				Cwd: g.Store().Project()}}}, policy.Deny, policy.Allow, true},
		{"no requests", gate.Call{SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: "t6", ToolInputHash: "sha256:y"},
			policy.Deny, policy.Deny, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := g.Decide(t.Context(), tt.call)
			if err != nil || d.Decision.Decision != tt.decision || d.Answer() != tt.answer || d.Unenforced != tt.unenforced {
				t.Fatalf("Decide = %s (%s) answered %s unenforced %v, %v; want %s answered %s unenforced %v",
					d.Decision.Decision, d.Reason, d.Answer(), d.Unenforced, err, tt.decision, tt.answer, tt.unenforced)
			}
			r, err := receipts.Open(d.Receipt, receipts.PinnedKey(g.PublicKey()))
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Payload.Enforced; (got != nil) != tt.unenforced || got != nil && *got {
				t.Errorf("receipt enforced = %v, want false only when unenforced (%v)", got, tt.unenforced)
			}
		})
	}
}

// An execution of a deny observe mode did not enforce links it, found in
// the chain or handed over, and the chain verifies.
func TestObserveExecutionLinks(t *testing.T) {
	g := newGate(t, observing(false))
	ctx := t.Context()
	d1, err := g.Decide(ctx, bash(g, "t1", "rm -rf /"))
	if err != nil || !d1.Unenforced {
		t.Fatalf("Decide(rm -rf /) = %+v, %v; want an unenforced deny", d1, err)
	}
	d2, err := g.Decide(ctx, bash(g, "t2", "rm -rf /"))
	if err != nil || !d2.Unenforced {
		t.Fatalf("Decide(rm -rf /) = %+v, %v; want an unenforced deny", d2, err)
	}
	for _, e := range []gate.Event{
		{HookEvent: receipts.PostToolUse, SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: "t1", ToolOutputHash: "sha256:o"},
		{HookEvent: receipts.PostToolUse, SessionID: "s", Agent: "claude-code", ToolName: "Bash", ToolUseID: "t2", ToolOutputHash: "sha256:o",
			Decision: d2.Pending("Bash")},
	} {
		r, err := g.Record(ctx, e)
		if err != nil || r.Unlinked {
			t.Fatalf("Record(%s) = %+v, %v; want it linked to the unenforced deny", e.ToolUseID, r, err)
		}
	}
	pl := payloads(t, g)
	if len(pl) != 4 || pl[2].DecisionReceiptHash != receipts.ChainHash(d1.Receipt) || pl[3].DecisionReceiptHash != receipts.ChainHash(d2.Receipt) ||
		pl[2].Decision != policy.Deny || pl[2].Reason != receipts.ReasonExecuted {
		t.Fatalf("chain %+v; want two denies and their executions", pl)
	}
}

// Observe mode never fails open: a policy that does not load, or a
// configuration that cannot be read (which cannot say observe is on), deny.
func TestObserveFailsClosed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		edit   func(*store.Store)
		reason string
	}{
		{"broken policy", func(s *store.Store) {
			observing(false)(s)
			writeFile(t, filepath.Join(s.PolicyDir(), "x.cedar"), []byte("permit (principal, action, resource) when { parse error"))
		}, policy.ReasonGateError},
		{"unreadable config", func(s *store.Store) {
			writeFile(t, s.ConfigPath(), []byte(`{"observe":true,"unknown":1}`))
		}, gate.ReasonLogUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t, tt.edit)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			d, err := g.Decide(ctx, bash(g, "t1", "rm -rf /; go test ./..."))
			if tt.reason == gate.ReasonLogUnavailable {
				// The policy's deny is not waited for; an allow would be.
				d, err = g.Decide(ctx, bash(g, "t2", "go test ./..."))
			}
			if err != nil || d.Answer() != policy.Deny || d.Unenforced || d.Reason != tt.reason {
				t.Fatalf("Decide = %s (%s) answered %s, %v; want an enforced %s deny", d.Decision.Decision, d.Reason, d.Answer(), err, tt.reason)
			}
		})
	}
}

// In strict mode a deny observe mode answers as an allow waits for the log
// like an allow, and is refused (enforced) when the log cannot take it.
func TestObserveStrict(t *testing.T) {
	_, vkey, err := note.GenerateKey(rand.Reader, "log.test")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, func(s *store.Store) {
		if err := s.WriteConfig(store.Config{Observe: true, RequireLog: true, LogURL: "http://127.0.0.1:1", LogKey: vkey}); err != nil {
			t.Fatal(err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	d, err := g.Decide(ctx, bash(g, "t1", "rm -rf /"))
	if err != nil || d.Reason != gate.ReasonLogUnavailable || d.Unenforced || d.Answer() != policy.Deny {
		t.Fatalf("Decide(rm -rf /, log down) = %s (%s) answered %s, %v; want an enforced log_unavailable deny", d.Decision.Decision, d.Reason, d.Answer(), err)
	}
	pl := payloads(t, g)
	if len(pl) != 2 || pl[0].Enforced == nil || *pl[0].Enforced || pl[1].Enforced != nil || pl[1].Reason != gate.ReasonLogUnavailable {
		t.Fatalf("chain %+v; want the unenforced deny, then its enforced refusal", pl)
	}
}

// The journal holds each decided call's exact input under its receipt's
// hash, only when the project keeps one.
func TestJournal(t *testing.T) {
	for _, on := range []bool{false, true} {
		g := newGate(t, observing(on))
		call := bash(g, "t1", "rm -rf /")
		call.ToolInput = []byte(`{"command":"rm -rf /"}`)
		d, err := g.Decide(t.Context(), call)
		if err != nil {
			t.Fatal(err)
		}
		var got []store.JournalEntry
		for e, err := range g.Store().Journal("s") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		if !on {
			if len(got) != 0 {
				t.Errorf("journal off: entries %+v, want none", got)
			}
			continue
		}
		if len(got) != 1 || got[0].ReceiptHash != receipts.ChainHash(d.Receipt) || string(got[0].ToolInput) != string(call.ToolInput) ||
			got[0].Sequence != 1 || got[0].ToolName != "Bash" || got[0].Cwd != g.Store().Project() {
			t.Errorf("journal = %+v, want the call's input under its receipt's hash", got)
		}
	}
}

// Preview answers as Decide's caller would: in observe mode a tool the
// policy always denies is not hidden, since its calls would run.
func TestObservePreview(t *testing.T) {
	for _, observe := range []bool{false, true} {
		g := newGate(t, func(s *store.Store) {
			if err := s.WriteConfig(store.Config{Observe: observe}); err != nil {
				t.Fatal(err)
			}
		})
		d := g.Preview(t.Context(), bash(g, "t1", "rm -rf /").Requests)
		if want := map[bool]string{false: policy.Deny, true: policy.Allow}[observe]; d.Decision != want {
			t.Errorf("Preview(rm -rf /), observe %v = %s, want %s", observe, d.Decision, want)
		}
	}
}
