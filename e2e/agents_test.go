package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
)

// The real agent CLIs, installed from npm at pinned versions by
// .ci/deps/agents.sh into DOCKET_AGENTS_BIN.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("the real %s CLI runs in the full test only", name)
	}
	dir := os.Getenv("DOCKET_AGENTS_BIN")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "docket-ci", "agents", "node_modules", ".bin")
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		if why := os.Getenv("DOCKET_AGENTS_UNAVAILABLE"); why != "" {
			t.Skipf("%s CLI not installed (%s): .ci/deps/agents.sh installs it", name, why)
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("%s CLI not installed in %s: .ci/deps/agents.sh should have installed it", name, dir)
		}
		t.Skipf("%s CLI not installed in %s: run .ci/deps/agents.sh", name, dir)
	}
	return path
}

// agentProject is one project, with its own HOME, set up by docket init.
type agentProject struct {
	t       *testing.T
	dir     string // the project
	home    string // HOME of docket and the agent
	secret  string // the fake secret in .env
	outside string // a directory outside the project
	env     []string
}

func newAgentProject(t *testing.T, agent string) *agentProject {
	return newAgentProjectWith(t, agent, docketPath(t))
}

// newAgentProjectWith is newAgentProject with the hooks running the docket
// binary hookBin.
func newAgentProjectWith(t *testing.T, agent, hookBin string) *agentProject {
	root := t.TempDir()
	p := &agentProject{t: t, dir: filepath.Join(root, "project"), home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{p.dir, p.home, p.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 12)
	rand.Read(b)
	p.secret = "docket-fake-secret-" + hex.EncodeToString(b)
	writeFile(t, filepath.Join(p.dir, ".env"), "API_TOKEN="+p.secret+"\n")
	writeFile(t, filepath.Join(p.dir, "README.md"), "a project\n")
	p.env = []string{
		"HOME=" + p.home,
		"PATH=" + filepath.Dir(nodePath()) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1", "CI=1",
	}
	p.run(nil, "git", "init", "-q")
	out, code := p.docket("init", "-agent", agent, "-command", hookBin)
	if code != 0 {
		t.Fatalf("docket init -agent %s: exit %d\n%s", agent, code, out)
	}
	t.Logf("docket init -agent %s:\n%s", agent, out)
	return p
}

func nodePath() string {
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	return "/usr/bin/node"
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs a command in the project with the project's environment (and
// extra), bounded by two minutes, and returns its combined output and exit
// code.
func (p *agentProject) run(extra []string, name string, args ...string) (string, int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = p.dir
	cmd.Env = append(append([]string{}, p.env...), extra...)
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		p.t.Fatalf("%s %v: did not finish in time\n%s", name, args, out.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		p.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), 0
}

func (p *agentProject) docket(args ...string) (string, int) {
	return p.run(nil, docketPath(p.t), args...)
}

func (p *agentProject) exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// receipts verifies every session chain with docket verify and returns
// every receipt's payload.
func (p *agentProject) receipts() []receipts.Payload {
	p.t.Helper()
	chains, _ := filepath.Glob(filepath.Join(p.dir, ".docket", "sessions", "*.jsonl"))
	if len(chains) == 0 {
		p.t.Fatal("no session chain in .docket/sessions: the hooks never ran")
	}
	out, code := p.docket(append([]string{"verify", "-key-file", filepath.Join(p.dir, ".docket", "issuer.key")}, chains...)...)
	if code != 0 {
		p.t.Fatalf("docket verify: exit %d\n%s", code, out)
	}
	var payloads []receipts.Payload
	for _, c := range chains {
		data, err := os.ReadFile(c)
		if err != nil {
			p.t.Fatal(err)
		}
		for _, l := range receipts.SplitLines(data) {
			var r struct{ Payload receipts.Payload }
			if err := json.Unmarshal(l, &r); err != nil {
				p.t.Fatal(err)
			}
			payloads = append(payloads, r.Payload)
		}
	}
	return payloads
}

// agentCase is what one agent run must show.
type agentCase struct {
	denied  []string // markers that must not exist
	allowed []string // markers that must exist
	// decisions and executions the receipts must hold, as
	// "hook_event decision" (decision empty for executions).
	wantDeny, wantAllow, wantExec int
	// executions receipted as failed (PostToolUseFailure)
	wantFailed int
	// unmediated_call receipts: calls of the agent's own record that no
	// hook decided (package reconcile, at Stop and SessionEnd)
	wantUnmediated int
}

func (p *agentProject) check(m *modelServer, c agentCase, output string) {
	t := p.t
	t.Helper()
	if m.calls < len(m.script) {
		t.Errorf("the agent asked the model %d times for a tool call, want %d (every scripted call)\nrequests:\n%s\noutput:\n%s", m.calls, len(m.script), m.requests(), output)
	}
	for _, f := range c.denied {
		if p.exists(f) {
			t.Errorf("%s exists: a denied call ran", f)
		}
	}
	for _, f := range c.allowed {
		if !p.exists(f) {
			t.Errorf("%s is missing: an allowed call did not run\noutput:\n%s", f, output)
		}
	}
	if m.sent(p.secret) {
		t.Errorf("the secret in .env reached the model server")
	}
	deny, allow, exec, failed, unmediated, reconciled := 0, 0, 0, 0, 0, 0
	var all []string
	for _, pl := range p.receipts() {
		all = append(all, fmt.Sprintf("%s %s %s %s %s %s %s", pl.SessionID, pl.HookEvent, pl.LifecycleEvent, pl.ToolName, pl.Decision, pl.TranscriptPosition, pl.TranscriptHash))
		if strings.HasPrefix(pl.SessionID, "docket-doctor-") {
			continue
		}
		switch {
		case pl.HookEvent == receipts.PreToolUse && pl.Decision == "deny":
			deny++
		case pl.HookEvent == receipts.PreToolUse && pl.Decision == "allow":
			allow++
		case pl.HookEvent == receipts.PostToolUse:
			exec++
		case pl.HookEvent == receipts.PostToolUseFailure:
			exec++
			failed++
		case pl.HookEvent == receipts.UnmediatedCall:
			unmediated++
		case pl.LifecycleEvent == receipts.LifecycleSessionEnd && strings.HasPrefix(pl.TranscriptHash, "sha256:"):
			reconciled++
		}
	}
	if deny != c.wantDeny || allow != c.wantAllow || exec != c.wantExec || failed != c.wantFailed || unmediated != c.wantUnmediated || reconciled != 1 {
		t.Errorf("receipts: %d deny, %d allow, %d executions (%d failed), %d unmediated, %d reconciled session ends; want %d, %d, %d (%d), %d, 1\n%s",
			deny, allow, exec, failed, unmediated, reconciled, c.wantDeny, c.wantAllow, c.wantExec, c.wantFailed, c.wantUnmediated, strings.Join(all, "\n"))
	}
}

// hooksSkipped checks that a denied call ran because the agent skipped the
// project's hooks, as docket doctor said it would, and removes its marker.
func (p *agentProject) hooksSkipped(run, marker, out string) {
	p.t.Helper()
	path := filepath.Join(p.dir, marker)
	if !p.exists(path) {
		p.t.Fatalf("%s: the denied call did not run; the agent ran the project's hooks after all, and docket doctor's trust check is wrong for this version\n%s", run, out)
	}
	os.Remove(path)
	chains, _ := filepath.Glob(filepath.Join(p.dir, ".docket", "sessions", "*.jsonl"))
	for _, c := range chains {
		if !strings.HasPrefix(filepath.Base(c), "docket-doctor-") {
			p.t.Fatalf("%s: receipts in %s, yet the call ran unchecked", run, c)
		}
	}
}

// script is what the scripted model asks every agent for: a command the
// policy denies, a write outside the project, the reads of the secret, a
// command that fails and one that runs. Each is harmless if the gate
// failed, and leaves a marker if it ran.
func (p *agentProject) script(reads ...action) []action {
	s := []action{
		{"shell", "touch denied-marker; git push --force origin main"},
		{"shell", "touch " + filepath.Join(p.outside, "outside-marker")},
	}
	s = append(s, reads...)
	return append(s, action{"shell", "cat missing.txt"}, action{"shell", "touch allowed-marker"})
}

// scriptCase is what the script must show: three denials (the command,
// the write, the secret), two allowed commands run and receipted, the
// failed one as a failure.
func (p *agentProject) scriptCase() agentCase {
	return agentCase{
		denied:   []string{filepath.Join(p.dir, "denied-marker"), filepath.Join(p.outside, "outside-marker")},
		allowed:  []string{filepath.Join(p.dir, "allowed-marker")},
		wantDeny: 3, wantAllow: 2, wantExec: 2, wantFailed: 1,
	}
}

// TestClaudeCode drives the real Claude Code CLI (-p, permission prompts
// off) against the scripted model, with the settings docket init writes.
func TestClaudeCode(t *testing.T) {
	bin := agentBin(t, "claude")
	p := newAgentProject(t, "claude")
	m := newModelServer(t, "anthropic", p.script(action{"read", filepath.Join(p.dir, ".env")}))
	if out, code := p.docket("doctor"); code != 0 {
		t.Fatalf("docket doctor: exit %d\n%s", code, out)
	}
	out, code := p.run([]string{
		"ANTHROPIC_BASE_URL=" + m.URL, "ANTHROPIC_API_KEY=sk-ant-scripted", "IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
	}, bin, "-p", "run the scripted calls", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5")
	t.Logf("claude: exit %d\n%s", code, out)
	p.check(m, p.scriptCase(), out)
}

// TestGeminiCLI drives the real Gemini CLI (-p, --yolo) against the
// scripted model, with the settings docket init writes, after docket
// doctor has failed on the untrusted folder and passed once it is trusted.
func TestGeminiCLI(t *testing.T) {
	bin := agentBin(t, "gemini")
	p := newAgentProject(t, "gemini")
	m := newModelServer(t, "gemini", p.script(
		// Gemini CLI refuses this read itself, before any hook runs: no
		// receipt records it (docs/hook.md).
		action{"read", filepath.Join(p.dir, ".env")},
		action{"shell", "cat .env"},
	))
	writeFile(t, filepath.Join(p.home, ".gemini", "settings.json"),
		`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false}}`)
	env := []string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + m.URL}
	args := []string{"-p", "run the scripted calls", "--yolo", "-m", "gemini-2.5-flash"}

	// Untrusted, Gemini CLI refuses to start, and with --skip-trust runs
	// without the project's hooks: docket doctor must say so.
	out, code := p.docket("doctor")
	if code == 0 || !strings.Contains(out, "not trusted") || !strings.Contains(out, "fix: ") {
		t.Fatalf("docket doctor on an untrusted folder: exit %d, want a failing trust check with a fix\n%s", code, out)
	}
	// Why: with --skip-trust the same call runs, with no hook at all.
	skipped := newModelServer(t, "gemini", []action{{"shell", "touch skipped-marker; git push --force origin main"}})
	out, _ = p.run([]string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + skipped.URL}, bin, append(args, "--skip-trust")...)
	p.hooksSkipped("gemini --skip-trust", "skipped-marker", out)
	// What the fix says: trust the folder in Gemini CLI's own trust file.
	writeFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, p.dir))
	if out, code := p.docket("doctor"); code != 0 {
		t.Fatalf("docket doctor after trusting the folder: exit %d\n%s", code, out)
	}

	out, code = p.run(env, bin, args...)
	t.Logf("gemini: exit %d\n%s", code, out)
	c := p.scriptCase()
	// The read Gemini CLI refused itself is in its chat recording, with no
	// decision: the reconciliation at SessionEnd reports it.
	c.wantUnmediated = 1
	p.check(m, c, out)
	for _, pl := range p.receipts() {
		if pl.HookEvent == receipts.UnmediatedCall && (pl.ToolName != "read_file" || pl.ToolRan == nil || *pl.ToolRan) {
			t.Errorf("unmediated_call = %s (ran %v), want the refused read_file, not run", pl.ToolName, pl.ToolRan)
		}
	}
}

// TestCodex drives the real Codex CLI (exec, approvals and sandbox off)
// against the scripted model through a [model_providers] entry, with the
// hooks.json docket init writes, after docket doctor has failed on the
// untrusted project and hooks and passed once both are trusted.
func TestCodex(t *testing.T) {
	bin := agentBin(t, "codex")
	p := newAgentProject(t, "codex")
	patch := func(path string) string {
		return "*** Begin Patch\n*** Add File: " + path + "\n+patched\n*** End Patch\n"
	}
	heredoc := func(path string) string { return "apply_patch <<'EOF'\n" + patch(path) + "EOF\n" }
	m := newModelServer(t, "openai", []action{
		{"shell", "touch denied-marker; git push --force origin main"},
		{"shell", "touch " + filepath.Join(p.outside, "outside-marker")},
		{"read", ".env"},
		// The native apply_patch tool, and a patch through the shell.
		{"patch", patch(filepath.Join(p.outside, "patched-outside.txt"))},
		{"patch", patch("patched-inside.txt")},
		{"shell", heredoc(filepath.Join(p.outside, "heredoc-outside.txt"))},
		{"shell", heredoc("heredoc-inside.txt")},
		{"shell", "touch allowed-marker"},
	})
	codexHome := filepath.Join(p.home, ".codex")
	// A model Codex's catalog knows to take apply_patch as a native tool.
	writeFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "gpt-5.5"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
`, m.URL))
	env := []string{"CODEX_HOME=" + codexHome, "SCRIPTED_API_KEY=scripted"}

	// Untrusted, Codex runs no project hook, and says nothing.
	out, code := p.docket("doctor")
	if code == 0 || !strings.Contains(out, "project is not trusted") || !strings.Contains(out, "fix: ") {
		t.Fatalf("docket doctor on an untrusted Codex project: exit %d, want a failing project trust check with a fix\n%s", code, out)
	}
	// Why: the same call runs, with no hook and no warning.
	skipped := newModelServer(t, "openai", []action{{"shell", "touch skipped-marker; git push --force origin main"}})
	out, _ = p.run(env, bin, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
		"-c", `model_providers.scripted.base_url="`+skipped.URL+`/v1"`, "run the scripted calls")
	p.hooksSkipped("codex exec in an untrusted project", "skipped-marker", out)
	// What the fix says: trust the project (Codex writes its config.toml).
	idle := newModelServer(t, "openai", nil)
	idleEnv := []string{"CODEX_HOME=" + codexHome, "SCRIPTED_API_KEY=scripted"}
	if out, code := p.run(idleEnv, bin, "exec", "--trust", "--skip-git-repo-check", "-c", `model_providers.scripted.base_url="`+idle.URL+`/v1"`, "say hello"); code != 0 {
		t.Fatalf("codex exec --trust: exit %d\n%s", code, out)
	}
	out, code = p.docket("doctor")
	if code == 0 || !strings.Contains(out, "are not trusted") || !strings.Contains(out, "/hooks") {
		t.Fatalf("docket doctor on a trusted Codex project with untrusted hooks: exit %d, want a failing hook trust check\n%s", code, out)
	}
	// What the fix says next: trust the hooks, as /hooks does, by writing
	// the currentHash Codex itself reports for each hook into config.toml.
	var trust strings.Builder
	for _, h := range codexHooks(t, p, bin, codexHome) {
		if h.TrustStatus != "untrusted" {
			t.Errorf("Codex reports hook %s %s before it was trusted", h.Key, h.TrustStatus)
		}
		fmt.Fprintf(&trust, "\n[hooks.state.%q]\ntrusted_hash = %q\n", h.Key, h.CurrentHash)
	}
	f, err := os.OpenFile(filepath.Join(codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(trust.String())
	f.Close()
	for _, h := range codexHooks(t, p, bin, codexHome) {
		if h.TrustStatus != "trusted" {
			t.Fatalf("Codex reports hook %s %s after trusting it", h.Key, h.TrustStatus)
		}
	}
	if out, code := p.docket("doctor"); code != 0 {
		t.Fatalf("docket doctor after trusting the project and its hooks: exit %d\n%s", code, out)
	}

	out, code = p.run(env, bin, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", "run the scripted calls")
	t.Logf("codex: exit %d\n%s", code, out)
	p.check(m, agentCase{
		denied: []string{filepath.Join(p.dir, "denied-marker"), filepath.Join(p.outside, "outside-marker"),
			filepath.Join(p.outside, "patched-outside.txt"), filepath.Join(p.outside, "heredoc-outside.txt")},
		allowed: []string{filepath.Join(p.dir, "allowed-marker"), filepath.Join(p.dir, "patched-inside.txt"), filepath.Join(p.dir, "heredoc-inside.txt")},
		// Codex 0.169 sends no PostToolUse for a patch it applies from
		// the shell (docs/hook.md).
		wantDeny: 5, wantAllow: 3, wantExec: 2,
	}, out)
}

// codexHook is one hook as Codex's app server lists it.
type codexHook struct {
	Key         string `json:"key"`
	Command     string `json:"command"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
}

// codexHooks asks the real Codex (app-server, hooks/list) which hooks it
// finds for the project and whether it trusts them.
func codexHooks(t *testing.T, p *agentProject, bin, codexHome string) []codexHook {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server")
	cmd.Dir = p.dir
	cmd.Env = append(append([]string{}, p.env...), "CODEX_HOME="+codexHome)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	for _, msg := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"docket-e2e","title":"docket e2e","version":"1"}}}`,
		`{"method":"initialized"}`,
		fmt.Sprintf(`{"id":2,"method":"hooks/list","params":{"cwds":[%q]}}`, p.dir),
	} {
		fmt.Fprintln(in, msg)
	}
	dec := json.NewDecoder(outPipe)
	for {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []codexHook `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := dec.Decode(&resp); err != nil {
			t.Fatalf("codex app-server: %v", err)
		}
		if resp.ID != 2 {
			continue
		}
		if resp.Error != nil {
			t.Fatalf("codex app-server hooks/list: %s", resp.Error)
		}
		var hooks []codexHook
		for _, d := range resp.Result.Data {
			for _, h := range d.Hooks {
				if strings.Contains(h.Command, "docket") {
					hooks = append(hooks, h)
				}
			}
		}
		if len(hooks) != 4 {
			t.Fatalf("codex app-server lists %d docket hooks, want 4: %+v", len(hooks), hooks)
		}
		return hooks
	}
}

// docketPath is the docket the agents' hooks run: the test binary
// answering as docket, on $PATH (internal/cli/clitest).
func docketPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("docket")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
