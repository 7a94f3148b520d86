package reconcile

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Recorded records (testdata/PROVENANCE.md).
var (
	claudeSubagent = "testdata/claude/82ba5aa5-8839-4f6d-8827-395f0641e6a2.jsonl"
	claudeMCP      = "testdata/claude/deb82767-5e8d-4ac9-a2d7-222cf23b93f6.jsonl"
	claudeNested   = "testdata/claude/nested/fe013af3-7958-4d15-9807-90a686b1752d.jsonl"
	codexRollout   = "testdata/codex/rollout-2026-11-26T12-49-55-01a217e7-c625-7b60-ab63-65961e5bf99e.jsonl"
	geminiChat     = "testdata/gemini/session-2026-11-26T12-49-5eb34859.jsonl"
)

func tools(calls []Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Tool)
	}
	return out
}

func TestReadRecorded(t *testing.T) {
	tests := []struct {
		name, agent, path string
		session           string
		files             int
		tools             []string
		ids               []string
		servers           []string
	}{
		{name: "claude subagent", agent: Claude, path: claudeSubagent, session: "82ba5aa5-8839-4f6d-8827-395f0641e6a2", files: 2,
			tools: []string{"Agent", "Bash", "Read"}, ids: []string{"toolu_delegate", "toolu_01", "toolu_02"}},
		{name: "claude mcp outside", agent: Claude, path: claudeMCP, session: "deb82767-5e8d-4ac9-a2d7-222cf23b93f6", files: 1,
			tools: []string{"mcp__outside__echo", "Bash"}, ids: []string{"toolu_01", "toolu_02"}, servers: []string{"outside", ""}},
		{name: "claude nested subagents", agent: Claude, path: claudeNested, session: "fe013af3-7958-4d15-9807-90a686b1752d", files: 4,
			tools: []string{"Agent", "Bash", "Read", "mcp__outside__echo", "Agent", "Agent"},
			ids:   []string{"toolu_delegate", "toolu_01", "toolu_02", "toolu_03", "toolu_delegate", "toolu_delegate"}},
		{name: "codex", agent: Codex, path: codexRollout, session: "01a217e7-c625-7b60-ab63-65961e5bf99e", files: 1,
			tools: []string{"exec_command", "exec_command"}, ids: []string{"call_01", "call_02"}},
		{name: "gemini", agent: Gemini, path: geminiChat, session: "5eb34859-" /* prefix */, files: 1,
			tools: []string{"run_shell_command", "read_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Read(t.Context(), tt.agent, tt.path)
			if err != nil {
				t.Fatalf("Read(%s) = %v", tt.path, err)
			}
			if !strings.HasPrefix(rec.SessionID, tt.session) || len(rec.Files) != tt.files || rec.Truncated != "" {
				t.Errorf("Read(%s) = session %q, files %v, truncated %q; want %s…, %d files, whole", tt.path, rec.SessionID, rec.Files, rec.Truncated, tt.session, tt.files)
			}
			if got := tools(rec.Calls); !slices.Equal(got, tt.tools) {
				t.Errorf("Read(%s) calls = %v, want %v", tt.path, got, tt.tools)
			}
			for i, c := range rec.Calls {
				if !c.Ran || c.OutputHash == "" || !strings.HasPrefix(c.InputHash, "sha256:") || c.Position == "" {
					t.Errorf("call %d = %+v, want ran, with input and output hashes and a position", i, c)
				}
				if tt.ids != nil && c.ID != tt.ids[i] {
					t.Errorf("call %d id = %q, want %q", i, c.ID, tt.ids[i])
				}
				if tt.servers != nil && c.Server() != tt.servers[i] {
					t.Errorf("call %d server = %q, want %q", i, c.Server(), tt.servers[i])
				}
			}
			data, _ := os.ReadFile(tt.path)
			if tt.files == 1 && rec.Hash != hashBytes(data) {
				t.Errorf("Read(%s) hash = %s, want the file's SHA-256", tt.path, rec.Hash)
			}
		})
	}
}

func hashBytes(b []byte) string {
	var h hasher
	h.add("x", b)
	return h.hash()
}

// decisions returns a chain holding one PreToolUse decision for each call,
// with its id (withIDs) or without (as Gemini CLI's hooks, which send none).
func decisions(calls []Call, withIDs bool) []receipts.Payload {
	var out []receipts.Payload
	for _, c := range calls {
		p := receipts.Payload{HookEvent: receipts.PreToolUse, ToolName: c.Tool, ToolInputHash: c.InputHash, Decision: receipts.Allow}
		if withIDs {
			p.ToolUseID = c.ID
		}
		out = append(out, p)
	}
	return out
}

func TestMatch(t *testing.T) {
	read := func(agent, path string) []Call {
		rec, err := Read(t.Context(), agent, path)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Calls
	}
	sub := read(Claude, claudeSubagent)
	nested := read(Claude, claudeNested)
	gem := read(Gemini, geminiChat)
	delegate := receipts.Payload{HookEvent: receipts.PreToolUse, ToolName: "Agent", ToolUseID: "toolu_delegate", ToolInputHash: nested[0].InputHash}
	tests := []struct {
		name  string
		calls []Call
		chain []receipts.Payload
		want  []string // positions of the unmatched calls
	}{
		{"every call decided", sub, decisions(sub, true), nil},
		{"no decision at all", sub, nil, []string{sub[0].Position, sub[1].Position, sub[2].Position}},
		{"the subagent's Bash not decided", sub, slices.Delete(decisions(sub, true), 1, 2), []string{sub[1].Position}},
		{"reported before (Stop, then SessionEnd)", sub, append(decisions(sub[:1], true),
			receipts.Payload{HookEvent: receipts.UnmediatedCall, ToolName: "Bash", ToolUseID: "toolu_01", ToolInputHash: sub[1].InputHash},
			receipts.Payload{HookEvent: receipts.UnmediatedCall, ToolName: "Read", ToolUseID: "toolu_02", ToolInputHash: sub[2].InputHash}), nil},
		{"executions are no decisions", sub, []receipts.Payload{{HookEvent: receipts.PostToolUse, ToolName: "Agent", ToolUseID: "toolu_delegate", ToolInputHash: sub[0].InputHash}},
			[]string{sub[0].Position, sub[1].Position, sub[2].Position}},
		{"id the record holds three times, the gate saw once", nested[:1:1], nil, []string{nested[0].Position}},
		{"id the record holds three times, the gate saw twice", []Call{nested[0], nested[4], nested[5]},
			[]receipts.Payload{delegate, delegate}, []string{nested[5].Position}},
		{"gate saw it twice, the record once", nested[:1], []receipts.Payload{delegate, delegate}, nil},
		{"no ids: by tool and input hash", gem, decisions(gem, false), nil},
		{"no ids: same tool, other input", gem, []receipts.Payload{{HookEvent: receipts.PreToolUse, ToolName: "run_shell_command", ToolInputHash: gem[1].InputHash}},
			[]string{gem[0].Position, gem[1].Position}},
		{"a decision with another call's id does not match by input", sub[1:2], []receipts.Payload{{HookEvent: receipts.PreToolUse,
			ToolName: "Bash", ToolUseID: "toolu_other", ToolInputHash: sub[1].InputHash}}, []string{sub[1].Position}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Match(tt.calls, tt.chain) {
				got = append(got, c.Position)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTruncated cuts each recorded record inside its last line (an agent
// killed mid-write) and inside an earlier one.
func TestTruncated(t *testing.T) {
	for _, tt := range []struct{ agent, path string }{{Claude, claudeMCP}, {Codex, codexRollout}, {Gemini, geminiChat}} {
		t.Run(tt.agent, func(t *testing.T) {
			data, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Read(t.Context(), tt.agent, tt.path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			last := bytes.LastIndexByte(data[:len(data)-1], '\n')
			cut := filepath.Join(dir, filepath.Base(tt.path))
			os.WriteFile(cut, data[:last+1+20], 0o644)
			rec, err := Read(t.Context(), tt.agent, cut)
			if err != nil {
				t.Fatalf("Read(cut in its last line) = %v, want the record up to the cut", err)
			}
			nlines := bytes.Count(data, []byte("\n"))
			if want := filepath.Base(tt.path) + ":" + strconv.Itoa(nlines); rec.Truncated != want {
				t.Errorf("Read(cut) truncated = %q, want %q", rec.Truncated, want)
			}
			if th := rec.TranscriptHash(); !strings.HasPrefix(th, "unreadable: truncated at ") || !strings.Contains(th, rec.Hash) {
				t.Errorf("TranscriptHash() = %q, want unreadable: truncated at …, with the hash of the bytes read", th)
			}
			if len(rec.Calls) > len(whole.Calls) {
				t.Errorf("Read(cut) = %d calls, more than the whole record's %d", len(rec.Calls), len(whole.Calls))
			}
			// A line cut in the middle of the record is an error.
			first := bytes.IndexByte(data, '\n')
			broken := append(append(append([]byte{}, data[:first/2]...), '\n'), data[first+1:]...)
			os.WriteFile(cut, broken, 0o644)
			if _, err := Read(t.Context(), tt.agent, cut); err == nil || !strings.Contains(err.Error(), filepath.Base(tt.path)+":1:") {
				t.Errorf("Read(a line cut inside the record) = %v, want an error naming line 1", err)
			}
		})
	}
}

// TestHostileRecords: what the reader refuses, with an error naming why,
// never a hang or a silent pass.
func TestHostileRecords(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.jsonl")
	f, _ := os.Create(sparse)
	f.Truncate(MaxFileSize + 1)
	f.Close()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	tests := []struct {
		name, agent, path, want string
	}{
		{"a FIFO", Claude, fifo, "not a regular file"},
		{"a directory", Codex, dir, "not a regular file"},
		{"over the size limit", Gemini, sparse, "over the size limit"},
		{"missing", Claude, filepath.Join(dir, "none.jsonl"), "no such file"},
		{"not an object", Claude, write("a.jsonl", "[1]\n"), "a.jsonl:1:"},
		{"duplicate member", Claude, write("b.jsonl", `{"type":"assistant","type":"user"}`+"\n"), "b.jsonl:1:"},
		{"tool_use without input", Claude, write("c.jsonl", `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"x","name":"Bash"}]}}`+"\n"), "c.jsonl:1: tool_use without"},
		{"tool_use in a user entry", Claude, write("d.jsonl", `{"type":"user","message":{"content":[{"type":"tool_use","id":"x","name":"Bash","input":{}}]}}`+"\n"), "tool_use in a user entry"},
		{"assistant without message", Claude, write("e.jsonl", `{"type":"assistant"}`+"\n"), "without a message"},
		{"codex arguments not JSON", Codex, write("f.jsonl", `{"type":"response_item","payload":{"type":"function_call","name":"x","arguments":"{","call_id":"c"}}`+"\n"), "f.jsonl:1: function_call arguments"},
		{"gemini tool call not an object", Gemini, write("g.jsonl", `{"id":"m","type":"gemini","toolCalls":[1]}`+"\n"), "g.jsonl:1: tool call is not an object"},
		{"gemini tool call without a name", Gemini, write("h.jsonl", `{"id":"m","type":"gemini","toolCalls":[{"args":{}}]}`+"\n"), "without a name"},
		{"unknown agent", "cursor", write("i.jsonl", "{}\n"), "unknown agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Read(t.Context(), tt.agent, tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read(%s) = %+v, %v; want an error containing %q", tt.name, rec, err, tt.want)
			}
			if th := Unreadable(err); !strings.HasPrefix(th, "unreadable: ") || strings.Contains(th, "\n") {
				t.Errorf("Unreadable(%v) = %q, want one line starting unreadable:", err, th)
			}
		})
	}
	if _, err := Read(t.Context(), Claude, fifo); !errors.Is(err, safefile.ErrNotRegular) {
		t.Errorf("Read(FIFO) = %v, want safefile.ErrNotRegular", err)
	}
}

// newStore is a store with an issuer key.
func newStore(t *testing.T) (*store.Store, Session) {
	t.Helper()
	st := store.Open(t.TempDir())
	priv, kf := receipts.GenerateKey()
	if err := st.WriteKey(kf); err != nil {
		t.Fatal(err)
	}
	return st, Session{Store: st, Key: priv}
}

// endWith signs a session_end with transcriptHash, as the gate does.
func endWith(s Session) func(session, th string) error {
	return func(session, th string) error {
		_, err := s.Store.Append(session, store.AppendOptions{}, func(l store.Link) ([]byte, error) {
			return receipts.Sign(s.Key, receipts.Payload{Type: receipts.TypeLifecycle, SessionID: session, Sequence: l.Sequence,
				PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence, HookEvent: receipts.SessionEnd,
				LifecycleEvent: receipts.LifecycleSessionEnd, TranscriptHash: th})
		})
		return err
	}
}

// TestProject reconciles a recorded session that ran no hook, then finds
// the record edited after the session ended: its hash no longer matches
// the session_end's, and the edited call is one no receipt accounts for.
func TestProject(t *testing.T) {
	st, s := newStore(t)
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(codexRollout))
	data, err := os.ReadFile(codexRollout)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, data, 0o644)
	reports, err := Project(t.Context(), st, s.Key, Codex, []string{path}, endWith(s))
	if err != nil || len(reports) != 1 {
		t.Fatalf("Project = %+v, %v", reports, err)
	}
	r := reports[0]
	if !r.Ended || len(r.Unmediated) != 2 || r.Changed != "" || len(r.Late) != 0 {
		t.Fatalf("Project = %+v, want two unmediated calls and the session ended", r)
	}
	s.ID = r.Session
	chain, err := s.Chain()
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 3 || chain[0].HookEvent != receipts.UnmediatedCall || chain[2].TranscriptHash != hashBytes(data) {
		t.Fatalf("chain = %+v, want two unmediated_call receipts and a session_end with the rollout's hash", chain)
	}
	if p := chain[1]; p.ToolName != "exec_command" || p.ToolUseID != "call_02" || p.ToolRan == nil || !*p.ToolRan ||
		p.TranscriptPosition != filepath.Base(codexRollout)+":15" || p.Reason != receipts.ReasonNoDecision || p.Agent != Codex {
		t.Errorf("unmediated_call = %+v, want call_02's, at line 15, ran", p)
	}
	raw, _ := st.Receipts(s.ID)
	for i, res := range receipts.VerifyChain(raw, receipts.Options{Keys: receipts.PinnedKey(s.Key.Public().(ed25519.PublicKey))}) {
		if res.Outcome != receipts.Valid {
			t.Errorf("receipt %d: %v %s %s", i+1, res.Outcome, res.Cause, res.Detail)
		}
	}

	// Again, unchanged: nothing to report or sign.
	reports, err = Project(t.Context(), st, s.Key, Codex, []string{path}, endWith(s))
	if err != nil || reports[0].Changed != "" || len(reports[0].Late) != 0 || reports[0].Ended {
		t.Fatalf("Project again = %+v, %v; want nothing", reports, err)
	}
	// Edited after the fact: the command of call_01 rewritten.
	edited := bytes.Replace(data, []byte(`touch skipped-marker`), []byte(`touch harmless-thing`), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the rollout holds no 'touch skipped-marker'")
	}
	os.WriteFile(path, edited, 0o644)
	reports, err = Project(t.Context(), st, s.Key, Codex, []string{path}, endWith(s))
	if err != nil {
		t.Fatal(err)
	}
	r = reports[0]
	if !strings.Contains(r.Changed, hashBytes(edited)) || !strings.Contains(r.Changed, hashBytes(data)) || len(r.Late) != 1 || r.Late[0].ID != "call_01" || r.Ended {
		t.Fatalf("Project(edited) = %+v, want the hash mismatch named and call_01 late, nothing signed", r)
	}
	if after, _ := s.Chain(); len(after) != 3 {
		t.Errorf("chain after the edited record has %d receipts, want 3 (nothing signed after session_end)", len(after))
	}
}

func TestFinished(t *testing.T) {
	calls := []Call{{Tool: "a", Ran: true}, {Tool: "b"}, {Tool: "c", OutputHash: "sha256:x"}}
	if got := tools(Finished(calls)); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Finished = %v, want [a c] (the calls with a result)", got)
	}
}
