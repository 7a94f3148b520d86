package e2e

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/reconcile"
	"github.com/docketlog/docket/store"
)

// claudeSubagentCallsGated states what this Claude Code version (2.1.330,
// pinned by .ci/deps/agents.sh) does with a subagent's tool calls: it runs
// the project's PreToolUse hook for them (under the main session's id), so
// each has a decision receipt. A version that skips the hook for them must
// leave an unmediated_call receipt for each instead; TestReconcileClaudeSubagent
// fails either way if a call is missing, and names which way it went.
const claudeSubagentCallsGated = true

// recordAgentFiles copies the agent's own records of the run into
// $DOCKET_RECORD_TRANSCRIPTS/<name>/, when set: how the recorded
// transcripts in reconcile/testdata were made (see its PROVENANCE.md).
func recordAgentFiles(t *testing.T, p *agentProject, name string, files ...string) {
	dst := os.Getenv("DOCKET_RECORD_TRANSCRIPTS")
	if dst == "" {
		return
	}
	for _, f := range files {
		rel, err := filepath.Rel(p.home, f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dst, name, rel)
		writeFile(t, out, string(b))
	}
}

// claudeEnv is the environment of a Claude Code run against m.
func claudeEnv(m *modelServer) []string {
	return []string{"ANTHROPIC_BASE_URL=" + m.URL, "ANTHROPIC_API_KEY=sk-ant-scripted", "IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
}

// permitDelegation lets the project's policy permit Claude Code 2.1's
// delegation tool, Agent (the default policy knows it as Task, and denies
// Agent as an unknown tool), and trusts the MCP server named server.
func permitDelegation(t *testing.T, p *agentProject, server string) {
	pol := filepath.Join(p.dir, ".docket", "policy", "docket.cedar")
	b, err := os.ReadFile(pol)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `Action::"mcp__ide"]`, `Action::"mcp__ide", Action::"mcp__`+server+`"]`, 1)
	s += "\n@id(\"agent-delegation\")\npermit (principal, action == Action::\"Agent\", resource);\n"
	writeFile(t, pol, s)
}

// claudeTranscripts returns the session transcripts Claude Code wrote for
// the project (not its subagents').
func claudeTranscripts(t *testing.T, p *agentProject) []string {
	files, err := reconcile.Find(t.Context(), reconcile.Claude, p.dir, p.home)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// mcpServer writes a .mcp.json naming the npm everything server as name,
// outside docket mcp, or skips.
func mcpServer(t *testing.T, p *agentProject, name string) {
	nm := os.Getenv("DOCKET_MCP_NODE_MODULES")
	srv := filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(srv); nm == "" || err != nil {
		t.Skip("DOCKET_MCP_NODE_MODULES has no @modelcontextprotocol/server-everything: run . .ci/deps/mcp.sh")
	}
	writeFile(t, filepath.Join(p.dir, ".mcp.json"), fmt.Sprintf(`{"mcpServers":{%q:{"command":"node","args":[%q,"stdio"]}}}`, name, srv))
}

// TestReconcileClaudeSubagent drives the real Claude Code CLI with a model
// that delegates to a subagent, which runs Bash and Read: every call of
// the transcript (the subagent's file included) has a decision receipt or
// an unmediated_call receipt, never neither, and the session_end carries
// the transcript's hash.
func TestReconcileClaudeSubagent(t *testing.T) {
	bin := agentBin(t, "claude")
	p := newAgentProject(t, "claude")
	permitDelegation(t, p, "outside")
	m := newModelServer(t, "anthropic", []action{{"shell", "touch sub-marker"}, {"read", filepath.Join(p.dir, "README.md")}})
	m.delegate = true
	out, code := p.run(claudeEnv(m), bin, "-p", "run the scripted calls", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
	t.Logf("claude: exit %d\n%s", code, out)
	if !p.exists(filepath.Join(p.dir, "sub-marker")) {
		t.Fatalf("the subagent's Bash call did not run\n%s", out)
	}
	transcripts := claudeTranscripts(t, p)
	if len(transcripts) != 1 {
		t.Fatalf("Claude Code wrote %d session transcripts, want 1: %v", len(transcripts), transcripts)
	}
	rec, err := reconcile.ReadClaude(t.Context(), transcripts[0])
	if err != nil {
		t.Fatal(err)
	}
	var subFiles []string
	for _, f := range rec.Files[1:] {
		subFiles = append(subFiles, filepath.Join(filepath.Dir(transcripts[0]), f))
	}
	recordAgentFiles(t, p, "claude-subagent", append([]string{transcripts[0]}, subFiles...)...)

	chain := p.receipts()
	var subCalls []reconcile.Call
	for _, c := range rec.Calls {
		if strings.Contains(c.Position, "/subagents/") {
			subCalls = append(subCalls, c)
		}
	}
	tools := []string{}
	for _, c := range subCalls {
		tools = append(tools, c.Tool)
	}
	if !slices.Contains(tools, "Bash") || !slices.Contains(tools, "Read") {
		t.Fatalf("the subagent transcripts (%v) hold calls %v, want Bash and Read", rec.Files[1:], tools)
	}
	if missing := reconcile.Match(rec.Calls, chain); len(missing) != 0 {
		t.Fatalf("calls of the transcript with neither a decision nor an unmediated_call receipt: %+v", missing)
	}
	for _, c := range subCalls {
		gated, unmediated := false, false
		for _, pl := range chain {
			if pl.ToolUseID == c.ID && pl.ToolName == c.Tool {
				gated = gated || pl.HookEvent == receipts.PreToolUse
				unmediated = unmediated || pl.HookEvent == receipts.UnmediatedCall
			}
		}
		switch {
		case claudeSubagentCallsGated && !gated:
			t.Errorf("subagent call %s %s at %s: no decision receipt (unmediated_call: %v); this Claude Code version does not run PreToolUse for subagent calls: set claudeSubagentCallsGated = false", c.Tool, c.ID, c.Position, unmediated)
		case !claudeSubagentCallsGated && !unmediated:
			t.Errorf("subagent call %s %s at %s: no unmediated_call receipt (decision: %v)", c.Tool, c.ID, c.Position, gated)
		}
	}
	t.Logf("Claude Code: %d calls in %d transcript files, the subagent's %v gated by the hook: %v", len(rec.Calls), len(rec.Files), tools, claudeSubagentCallsGated)

	end := chain[len(chain)-1]
	if end.LifecycleEvent != receipts.LifecycleSessionEnd || !strings.HasPrefix(end.TranscriptHash, "sha256:") {
		t.Fatalf("last receipt = %s %s transcript_hash %q, want a session_end with the transcript's hash", end.HookEvent, end.LifecycleEvent, end.TranscriptHash)
	}
	// Claude Code writes nothing to the transcript after its SessionEnd
	// hook: the hash fixed there is the transcript's, and docket reconcile
	// finds it unchanged.
	if end.TranscriptHash != rec.Hash {
		t.Errorf("session_end transcript_hash = %s, want the transcript's %s", end.TranscriptHash, rec.Hash)
	}
	out, code = p.docket("reconcile", "-agent", "claude")
	if code != 0 || out != "" {
		t.Errorf("docket reconcile on the unchanged transcript: exit %d, want 0 and nothing reported\n%s", code, out)
	}
	// The subagent's transcript edited after the session ended: the hash
	// fixed in session_end no longer matches.
	sub := subFiles[0]
	data, err := os.ReadFile(sub)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(sub, []byte(strings.ReplaceAll(string(data), "touch sub-marker", "echo sub-marker")), 0o600)
	out, code = p.docket("reconcile", "-agent", "claude")
	if code != 1 || !strings.Contains(out, "record_changed "+rec.SessionID) || !strings.Contains(out, end.TranscriptHash) {
		t.Errorf("docket reconcile on the edited transcript: exit %d, want 1 and record_changed naming the hash its session_end fixed\n%s", code, out)
	}
}

// TestReconcileClaudeMCPOutside drives the real Claude Code CLI calling a
// tool of an MCP server configured outside docket mcp, in a run whose
// hooks are switched off (disableAllHooks in .claude/settings.local.json):
// docket reconcile finds the session in Claude Code's own directory, signs
// each call as an unmediated_call naming the MCP server, and docket audit
// reports them and exits 1.
func TestReconcileClaudeMCPOutside(t *testing.T) {
	bin := agentBin(t, "claude")
	p := newAgentProject(t, "claude")
	mcpServer(t, p, "outside")
	writeFile(t, filepath.Join(p.dir, ".claude", "settings.local.json"), `{"disableAllHooks": true}`)
	m := newModelServer(t, "anthropic", []action{{"mcp", "mcp__outside__echo"}, {"shell", "touch unhooked-marker"}})
	out, code := p.run(claudeEnv(m), bin, "-p", "run the scripted calls", "--dangerously-skip-permissions", "--mcp-config", filepath.Join(p.dir, ".mcp.json"),
		"--model", "claude-sonnet-4-5")
	t.Logf("claude: exit %d\n%s", code, out)
	if !p.exists(filepath.Join(p.dir, "unhooked-marker")) {
		t.Fatalf("the Bash call did not run\n%s", out)
	}
	if chains, _ := filepath.Glob(filepath.Join(p.dir, ".docket", "sessions", "*.jsonl")); len(chains) != 0 {
		t.Fatalf("chains %v: the hooks ran after all", chains)
	}
	recordAgentFiles(t, p, "claude-mcp-outside", claudeTranscripts(t, p)...)

	out, code = p.docket("reconcile", "-agent", "claude")
	t.Logf("docket reconcile: exit %d\n%s", code, out)
	if code != 1 || !strings.Contains(out, "mcp__outside__echo mcp server outside") || !strings.Contains(out, "unmediated_call") {
		t.Fatalf("docket reconcile: exit %d, want 1 and the MCP call naming server outside\n%s", code, out)
	}
	out, code = p.audit(t)
	if code != 1 || !strings.Contains(out, `MCP server "outside"`) {
		t.Fatalf("docket audit: exit %d, want 1 naming MCP server outside\n%s", code, out)
	}
}

// TestReconcileGeminiSkipTrust drives the real Gemini CLI with --skip-trust
// in an untrusted folder: it runs every call with no hook at all, and
// docket reconcile, reading its chat recording afterwards, signs each as
// an unmediated_call; docket audit exits 1 naming them.
func TestReconcileGeminiSkipTrust(t *testing.T) {
	bin := agentBin(t, "gemini")
	p := newAgentProject(t, "gemini")
	m := newModelServer(t, "gemini", []action{{"shell", "touch skipped-marker"}, {"read", filepath.Join(p.dir, "README.md")}})
	writeFile(t, filepath.Join(p.home, ".gemini", "settings.json"),
		`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false}}`)
	out, code := p.run([]string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + m.URL}, bin,
		"-p", "run the scripted calls", "--yolo", "-m", "gemini-2.5-flash", "--skip-trust")
	t.Logf("gemini: exit %d\n%s", code, out)
	p.hooksSkipped("gemini --skip-trust", "skipped-marker", out)
	files, err := reconcile.Find(t.Context(), reconcile.Gemini, p.dir, p.home)
	if err != nil || len(files) != 1 {
		t.Fatalf("Find(gemini) = %v, %v; want the run's chat recording", files, err)
	}
	recordAgentFiles(t, p, "gemini-skip-trust", files...)
	p.reconcileUnhooked(t, "gemini", []string{"run_shell_command", "read_file"})
}

// TestReconcileCodexUntrusted drives the real Codex CLI in a project it
// does not trust: it runs every call with no hook and no warning, and
// docket reconcile, reading its rollout file afterwards, signs each as an
// unmediated_call; docket audit exits 1 naming them.
func TestReconcileCodexUntrusted(t *testing.T) {
	bin := agentBin(t, "codex")
	p := newAgentProject(t, "codex")
	m := newModelServer(t, "openai", []action{{"shell", "touch skipped-marker"}, {"read", "README.md"}})
	codexHome := filepath.Join(p.home, ".codex")
	writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "gpt-5.5"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
`, m.URL))
	p.env = append(p.env, "CODEX_HOME="+codexHome)
	out, code := p.run([]string{"SCRIPTED_API_KEY=scripted"}, bin, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "run the scripted calls")
	t.Logf("codex: exit %d\n%s", code, out)
	p.hooksSkipped("codex exec in an untrusted project", "skipped-marker", out)
	files, err := reconcile.Find(t.Context(), reconcile.Codex, p.dir, p.home)
	if err != nil || len(files) != 1 {
		t.Fatalf("Find(codex) = %v, %v; want the run's rollout", files, err)
	}
	recordAgentFiles(t, p, "codex-untrusted", files...)
	p.reconcileUnhooked(t, "codex", []string{"exec_command", "exec_command"})
}

// reconcileUnhooked runs docket reconcile for a session that ran no hook:
// it must report and sign one unmediated_call per call (tools, in order),
// each with a result showing it ran, and end the session with the
// record's hash; a second run signs nothing more; docket audit exits 1
// naming each.
func (p *agentProject) reconcileUnhooked(t *testing.T, agent string, tools []string) {
	out, code := p.docket("reconcile", "-agent", agent)
	t.Logf("docket reconcile -agent %s: exit %d\n%s", agent, code, out)
	if code != 1 || strings.Count(out, "unmediated_call ") != len(tools) {
		t.Fatalf("docket reconcile -agent %s: exit %d, want 1 and %d unmediated calls\n%s", agent, code, len(tools), out)
	}
	var got []string
	var end receipts.Payload
	for _, pl := range p.receipts() {
		switch {
		case pl.HookEvent == receipts.UnmediatedCall:
			got = append(got, pl.ToolName)
			if pl.ToolRan == nil || !*pl.ToolRan || pl.TranscriptPosition == "" || pl.ToolInputHash == "" || pl.ToolUseID == "" {
				t.Errorf("unmediated_call %d = %+v, want a call id, input hash, position and tool_ran true", pl.Sequence, pl)
			}
		case pl.LifecycleEvent == receipts.LifecycleSessionEnd:
			end = pl
		}
	}
	if !slices.Equal(got, tools) {
		t.Errorf("unmediated_call receipts for %v, want %v", got, tools)
	}
	if !strings.HasPrefix(end.TranscriptHash, "sha256:") {
		t.Errorf("session_end transcript_hash = %q, want the record's hash", end.TranscriptHash)
	}
	// Once ended, the session is compared, not signed into again.
	if out, code := p.docket("reconcile", "-agent", agent); code != 0 || strings.Contains(out, "unmediated_call") || strings.Contains(out, "record_changed") {
		t.Errorf("second docket reconcile: exit %d, want 0 and nothing reported (the record matches its session_end)\n%s", code, out)
	}
	out, code = p.audit(t)
	if code != 1 || strings.Count(out, "unmediated_call") < len(tools) {
		t.Fatalf("docket audit: exit %d, want 1 naming each unmediated call\n%s", code, out)
	}
	for _, tool := range tools {
		if !strings.Contains(out, tool) {
			t.Errorf("docket audit does not name %s\n%s", tool, out)
		}
	}
}

// audit puts every receipt of the project's chains into a real Tessera log
// on disk and runs docket audit on it with -require-reconciled.
func (p *agentProject) audit(t *testing.T) (string, int) {
	st := store.Open(p.dir)
	key, err := st.Key()
	if err != nil {
		t.Fatal(err)
	}
	kp := tlogtest.NewKeyPair(t, "log.test/reconcile")
	l := tlogtest.NewPOSIX(t, t.TempDir(), kp)
	sessions, err := st.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		rs, err := st.Receipts(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			leaf, err := receipts.NewEntry(key.Public().(ed25519.PublicKey), r)
			if err != nil {
				t.Fatal(err)
			}
			l.Add(t, leaf)
		}
	}
	out, code := p.docket("audit", "-require-reconciled", "-log", l.Dir, "-log-key", kp.VKey, "-key-file", st.KeyPath(), filepath.Join(p.dir, ".docket"))
	t.Logf("docket audit: exit %d\n%s", code, out)
	return out, code
}
