package hook_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// recordedClaude is a real Claude Code transcript (reconcile/testdata,
// recorded with hooks off): toolu_01 calls mcp__outside__echo, toolu_02
// runs Bash "touch unhooked-marker"; both ran.
const (
	recordedClaude  = "../reconcile/testdata/claude/deb82767-5e8d-4ac9-a2d7-222cf23b93f6.jsonl"
	recordedSession = "deb82767-5e8d-4ac9-a2d7-222cf23b93f6"
)

func event(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStopAndSessionEndReconcile runs the built binary as Claude Code's
// hooks: a decision for one of the transcript's two calls, then Stop and
// SubagentStop (reconcile: the other call becomes an unmediated_call,
// once), then SessionEnd (the session_end carries the transcript's hash).
func TestStopAndSessionEndReconcile(t *testing.T) {
	p := newProject(t)
	data, err := os.ReadFile(recordedClaude)
	if err != nil {
		t.Fatal(err)
	}
	// A call in flight: in the transcript, no result yet, no decision yet
	// (a subagent running beside the one that stops). Stop leaves it to
	// SessionEnd.
	data = append(data, `{"type":"assistant","sessionId":"`+recordedSession+`","message":{"id":"msg_inflight","role":"assistant","content":[{"type":"tool_use","id":"toolu_inflight","name":"Bash","input":{"command":"sleep 1"}}]}}`+"\n"...)
	transcript := filepath.Join(p.home, "transcript.jsonl")
	writeFile(t, transcript, data, 0o600)
	in := map[string]any{"session_id": recordedSession, "tool_use_id": "toolu_02", "tool_input.command": "touch unhooked-marker"}
	if r := p.run(t, p.fixture(t, "claude/pre-bash.json", in), nil, "hook", "pre"); r.code != 0 {
		t.Fatalf("Pre = exit %d (%s), want 0", r.code, r.stderr)
	}
	for i, name := range []string{"Stop", "SubagentStop"} {
		ev := event(t, map[string]any{"session_id": recordedSession, "transcript_path": transcript, "cwd": p.dir, "hook_event_name": name})
		r := p.run(t, ev, nil, "hook", "stop")
		// The first tells the user (systemMessage); the second finds nothing new.
		if want := i == 0; r.code != 0 || strings.Contains(r.stdout, `"systemMessage":"docket: warning: 1 tool calls in the agent's transcript have no decision of the gate (first: mcp__outside__echo at transcript.jsonl:22)`) != want || !want && r.stdout != "" {
			t.Fatalf("%s = exit %d, stdout %q (stderr %q), want 0 and a warning only the first time", name, r.code, r.stdout, r.stderr)
		}
	}
	pl := p.verify(t, recordedSession)
	if len(pl) != 2 {
		t.Fatalf("chain after Stop and SubagentStop = %d receipts, want the decision and one unmediated_call", len(pl))
	}
	u := pl[1]
	if u.HookEvent != receipts.UnmediatedCall || u.ToolName != "mcp__outside__echo" || u.ToolUseID != "toolu_01" || u.ToolRan == nil || !*u.ToolRan ||
		u.TranscriptPosition != "transcript.jsonl:22" || u.ToolInputHash == "" || u.ToolOutputHash == "" || u.Agent != "claude-code" || u.Decision != "" {
		t.Fatalf("unmediated_call = %+v, want toolu_01's MCP call at transcript.jsonl:22, ran, with no decision", u)
	}
	ev := p.fixture(t, "claude/session-end.json", map[string]any{"session_id": recordedSession, "transcript_path": transcript})
	if r := p.run(t, ev, nil, "hook", "session-end"); r.code != 0 || !strings.Contains(r.stderr, "1 tool calls in the agent's transcript have no decision of the gate (first: Bash at transcript.jsonl:39)") {
		t.Fatalf("SessionEnd = exit %d (%s), want 0 and a warning naming the call in flight", r.code, r.stderr)
	}
	pl = p.verify(t, recordedSession)
	sum := sha256.Sum256(data)
	if end := pl[len(pl)-1]; len(pl) != 4 || end.LifecycleEvent != receipts.LifecycleSessionEnd || end.TranscriptHash != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("chain after SessionEnd = %d receipts ending %+v, want the call in flight and a session_end with the transcript's SHA-256", len(pl), end)
	}
	if u := pl[2]; u.HookEvent != receipts.UnmediatedCall || u.ToolUseID != "toolu_inflight" || u.ToolRan == nil || *u.ToolRan || u.ToolOutputHash != "" {
		t.Fatalf("receipt 3 = %+v, want the call without a result, as an unmediated_call that did not run", u)
	}
}

// TestSessionEndUnreadable: a session_end whose transcript could not be
// read says why, never passes silently; the hook still exits 0 at once.
func TestSessionEndUnreadable(t *testing.T) {
	p := newProject(t)
	data, err := os.ReadFile(recordedClaude)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(p.home, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(p.home, "cut.jsonl")
	writeFile(t, cut, data[:len(data)-30], 0o600)
	tests := []struct {
		name string
		path any // transcript_path; nil: none
		want string
	}{
		{"no transcript_path", nil, "unreadable: the hook event names no transcript_path"},
		{"missing", filepath.Join(p.home, "none.jsonl"), "unreadable: reading the transcript: "},
		{"a FIFO", fifo, "not a regular file"},
		{"a directory", p.home, "not a regular file"},
		{"truncated", cut, "unreadable: truncated at cut.jsonl:"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := "unreadable-" + string(rune('a'+i))
			ev := p.fixture(t, "claude/session-end.json", map[string]any{"session_id": session, "transcript_path": tt.path})
			if r := p.run(t, ev, nil, "hook", "session-end"); r.code != 0 {
				t.Fatalf("SessionEnd = exit %d (%s), want 0", r.code, r.stderr)
			}
			pl := p.verify(t, session)
			end := pl[len(pl)-1]
			if end.LifecycleEvent != receipts.LifecycleSessionEnd || !strings.HasPrefix(end.TranscriptHash, "unreadable: ") || !strings.Contains(end.TranscriptHash, tt.want) {
				t.Fatalf("session_end transcript_hash = %q, want unreadable: …%s…", end.TranscriptHash, tt.want)
			}
		})
	}
}
