package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// toolResults returns the text and error flag of every tool result the
// agent sent the model, by tool_use_id.
func (m *modelServer) toolResults() map[string]toolResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]toolResult{}
	for _, b := range m.bodies {
		_, body, _ := strings.Cut(string(b), "\n")
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal([]byte(body), &req) != nil {
			continue
		}
		for _, msg := range req.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   bool            `json:"is_error"`
			}
			if json.Unmarshal(msg.Content, &blocks) != nil {
				continue
			}
			for _, bl := range blocks {
				if bl.Type != "tool_result" {
					continue
				}
				var text string
				if json.Unmarshal(bl.Content, &text) != nil {
					var parts []struct{ Text string }
					json.Unmarshal(bl.Content, &parts)
					for _, p := range parts {
						text += p.Text
					}
				}
				out[bl.ToolUseID] = toolResult{text, bl.IsError}
			}
		}
	}
	return out
}

type toolResult struct {
	text    string
	isError bool
}

// TestClaudeCodeConfined drives the real Claude Code CLI in a project that
// confines its commands: each allowed Bash call runs under docket exec
// (the pre hook's updatedInput), the working directory carries over from
// one call to the next, exit codes and long outputs are those of the
// same script run without confinement, and commands the analyser allows
// that read ~/.ssh/id_ed25519 through $HOME get nothing.
func TestClaudeCodeConfined(t *testing.T) {
	bin := agentBin(t, "claude")
	if s := confine.Support(); s.Mechanism == "" {
		t.Skip(s)
	}
	const key = "FIXTURE-SSH-KEY-for-docket-e2e"
	script := func(p *agentProject) []action {
		return []action{
			{"shell", "mkdir -p sub && cd sub"},
			{"shell", "pwd"},
			{"shell", "echo to-stderr >&2; exit 3"},
			{"shell", "seq 1 4000"},
			{"shell", "cd .. && touch confined-marker && pwd"},
			{"shell", `cd "$HOME" && grep -r "" .ssh`},
			{"shell", `cd ` + p.dir + ` && printf 'all:\n\t@cat $$HOME/.ssh/id_ed25519\n' > Makefile && make`},
			{"shell", `cd ` + p.dir + ` && printf 'all:\n\t@echo planted >> .git/hooks/pre-commit\n' > Makefile.w && make -f Makefile.w`},
		}
	}
	run := func(confined bool) (*agentProject, *modelServer, string) {
		p := newAgentProject(t, "claude")
		writeFile(t, filepath.Join(p.home, ".ssh", "id_ed25519"), key+"\n")
		if confined {
			s := store.Open(p.dir)
			cfg, err := s.Config()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Confine = true
			if err := s.WriteConfig(cfg); err != nil {
				t.Fatal(err)
			}
		}
		m := newModelServer(t, "anthropic", script(p))
		out, code := p.run([]string{
			"ANTHROPIC_BASE_URL=" + m.URL, "ANTHROPIC_API_KEY=sk-ant-scripted", "IS_SANDBOX=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		}, bin, "-p", "run the scripted calls", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
		t.Logf("claude (confined %v): exit %d\n%s", confined, code, out)
		if m.calls < len(m.script) {
			t.Fatalf("the agent asked for %d calls, want %d\n%s", m.calls, len(m.script), m.requests())
		}
		return p, m, out
	}
	plainP, plainM, _ := run(false)
	p, m, _ := run(true)
	plain, got := plainM.toolResults(), m.toolResults()
	for id, r := range got {
		t.Logf("%s: error %v, %.120q", id, r.isError, r.text)
	}
	norm := func(s, dir string) string { return strings.ReplaceAll(s, dir, "PROJECT") }
	for i, name := range []string{"cd sub", "pwd", "exit 3", "long output", "cd .. and pwd"} {
		id := fmt.Sprintf("toolu_%02d", i+1)
		if norm(got[id].text, p.dir) != norm(plain[id].text, plainP.dir) || got[id].isError != plain[id].isError {
			t.Errorf("%s: confined result %q (error %v), want %q (error %v) as without docket", name, got[id].text, got[id].isError, plain[id].text, plain[id].isError)
		}
	}
	if r := got["toolu_02"].text; !strings.Contains(r, filepath.Join(p.dir, "sub")) {
		t.Errorf("pwd after cd sub = %q, want %s/sub", r, p.dir)
	}
	if r := got["toolu_04"].text; !strings.Contains(r, "\n4000") {
		t.Errorf("seq 1 4000 = …%q, want it to end with 4000", r[max(0, len(r)-40):])
	}
	if !p.exists(filepath.Join(p.dir, "confined-marker")) {
		t.Errorf("confined-marker missing: the confined command did not run")
	}
	// Unconfined, the analyser-allowed reads get the key: the case tests something.
	if !strings.Contains(plain["toolu_06"].text+plain["toolu_07"].text, key) {
		t.Errorf("without confinement, the reads did not get the key: %q %q", plain["toolu_06"].text, plain["toolu_07"].text)
	}
	if m.sent(key) {
		t.Errorf("the key reached the model under confinement: %q %q", got["toolu_06"].text, got["toolu_07"].text)
	}

	allowed, confined, deniedByKernel := 0, 0, 0
	decisions := map[string]string{}
	inputs := map[string]string{} // tool_use_id → the decision's tool_input_hash
	for _, pl := range p.receipts() {
		if strings.HasPrefix(pl.SessionID, "docket-doctor-") {
			continue
		}
		if pl.HookEvent == receipts.PreToolUse {
			decisions[pl.ToolUseID] = pl.Decision
			inputs[pl.ToolUseID] = pl.ToolInputHash
			if pl.Decision == "allow" {
				allowed++
			}
			continue
		}
		if pl.HookEvent != receipts.PostToolUse && pl.HookEvent != receipts.PostToolUseFailure {
			continue
		}
		if c := pl.Confinement; c == nil || c.Unconfined || c.Mechanism != confine.MechanismLandlock || !strings.HasPrefix(c.Digest, "sha256:") {
			t.Errorf("execution %s: confinement %+v, want landlock and a digest", pl.ToolUseID, pl.Confinement)
		} else {
			confined++
		}
		if pl.ToolInputHash != inputs[pl.ToolUseID] {
			t.Errorf("execution %s: tool_input_hash %s, want the decision's %s (the call as the agent asked for it)", pl.ToolUseID, pl.ToolInputHash, inputs[pl.ToolUseID])
		}
		if pl.Reason == receipts.ReasonConfinementDenied {
			deniedByKernel++
		}
	}
	if deniedByKernel == 0 {
		t.Errorf("no execution receipted as %s: the write to .git/hooks the kernel refused (%q) should be", receipts.ReasonConfinementDenied, got["toolu_08"].text)
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, ".git", "hooks", "pre-commit")); strings.Contains(string(b), "planted") {
		t.Errorf(".git/hooks/pre-commit was written under confinement")
	}
	if b, _ := os.ReadFile(filepath.Join(plainP.dir, ".git", "hooks", "pre-commit")); !strings.Contains(string(b), "planted") {
		t.Errorf("without confinement the Makefile did not write .git/hooks/pre-commit: the case tests nothing (%q)", plain["toolu_08"].text)
	}
	if decisions["toolu_06"] != "allow" && decisions["toolu_07"] != "allow" {
		t.Errorf("the analyser allows neither read of the key (%v): the test shows no command the analyser misread", decisions)
	}
	// Every allowed call ran confined. The analyser asks about the
	// Makefile planted and run in one line (toolu_07) since issue 22;
	// every other call is allowed.
	if confined != allowed || allowed < len(m.script)-1 {
		t.Errorf("%d confined executions of %d allowed calls, want every one of at least %d", confined, allowed, len(m.script)-1)
	}
	t.Logf("%d allowed, %d confined executions, %d receipted as confinement_denied", allowed, confined, deniedByKernel)
}

// TestGeminiCLIConfined drives the real Gemini CLI in a project that
// confines: its BeforeTool hook answers hookSpecificOutput.tool_input, and
// the shell call runs under docket exec: a read of ~/.ssh/id_ed25519 the
// analyser allows gets nothing, the receipts name the confinement.
func TestGeminiCLIConfined(t *testing.T) {
	bin := agentBin(t, "gemini")
	if s := confine.Support(); s.Mechanism == "" {
		t.Skip(s)
	}
	const key = "FIXTURE-SSH-KEY-for-docket-gemini"
	p := newAgentProject(t, "gemini")
	writeFile(t, filepath.Join(p.home, ".ssh", "id_ed25519"), key+"\n")
	s := store.Open(p.dir)
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Confine = true
	if err := s.WriteConfig(cfg); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.home, ".gemini", "settings.json"),
		`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false}}`)
	writeFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, p.dir))
	m := newModelServer(t, "gemini", []action{
		{"shell", `cd "$HOME" && grep -r "" .ssh`},
		{"shell", "touch " + filepath.Join(p.dir, "confined-marker")},
	})
	out, code := p.run([]string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + m.URL}, bin, "-p", "run the scripted calls", "--yolo", "-m", "gemini-2.5-flash")
	t.Logf("gemini: exit %d\n%s", code, out)
	if m.calls < len(m.script) {
		t.Fatalf("the agent asked for %d calls, want %d\n%s", m.calls, len(m.script), m.requests())
	}
	if m.sent(key) {
		t.Errorf("the key reached the model under confinement")
	}
	if !p.exists(filepath.Join(p.dir, "confined-marker")) {
		m.mu.Lock()
		last := string(m.bodies[len(m.bodies)-1])
		m.mu.Unlock()
		i := strings.LastIndex(last, "functionResponse")
		t.Errorf("confined-marker missing: the confined command did not run\n%s\nlast response: %.1500s", out, last[max(0, i):])
	}
	confined := 0
	for _, pl := range p.receipts() {
		if strings.HasPrefix(pl.SessionID, "docket-doctor-") || (pl.HookEvent != receipts.PostToolUse && pl.HookEvent != receipts.PostToolUseFailure) {
			continue
		}
		if c := pl.Confinement; c != nil && c.Mechanism == confine.MechanismLandlock {
			confined++
		} else {
			t.Errorf("execution %d: confinement %+v, want landlock", pl.Sequence, pl.Confinement)
		}
	}
	if confined != 2 {
		t.Errorf("%d confined executions, want 2", confined)
	}
}
