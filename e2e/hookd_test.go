package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docketlog/docket/internal/hookd"
	"github.com/docketlog/docket/receipts"
)

// builtDocket builds the docket binary of this tree (static, as the README
// installs it): the test binary that answers as docket does not link the
// hand-over to the gate daemon (internal/hookd/fast).
func builtDocket(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docket")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/docket")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building docket: %v\n%s", err, out)
	}
	return bin
}

// TestHookDaemonAgents drives the real Claude Code and Gemini CLIs with
// the hooks running the built docket binary, as a user installs it: the
// first pre hook decides in its own process and starts the project's gate
// daemon (docket hookd), and the agent's later pre hooks are answered by
// it, as are the post hooks once it runs; each hook's log line says which. The agent's environment is the
// same for every hook it runs, else the daemon would decline them all. The
// receipts are those of TestClaudeCode and TestGeminiCLI, and verify.
func TestHookDaemonAgents(t *testing.T) {
	for _, tt := range []struct {
		name, agent, bin, api string
		env                   func(p *agentProject, url string) []string
		args                  []string
		reads                 func(p *agentProject) []action
		unmediated            int
	}{
		{
			name: "claude", agent: "claude", bin: "claude", api: "anthropic",
			env: func(p *agentProject, url string) []string {
				return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-scripted", "IS_SANDBOX=1",
					"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
			},
			args:  []string{"-p", "run the scripted calls", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5"},
			reads: func(p *agentProject) []action { return []action{{"read", filepath.Join(p.dir, ".env")}} },
		},
		{
			name: "gemini", agent: "gemini", bin: "gemini", api: "gemini",
			env: func(p *agentProject, url string) []string {
				writeFile(t, filepath.Join(p.home, ".gemini", "settings.json"),
					`{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false}}`)
				return []string{"GEMINI_API_KEY=scripted", "GOOGLE_GEMINI_BASE_URL=" + url}
			},
			args: []string{"-p", "run the scripted calls", "--yolo", "-m", "gemini-2.5-flash"},
			// Gemini CLI refuses the read of .env itself (TestGeminiCLI).
			reads: func(p *agentProject) []action {
				return []action{{"read", filepath.Join(p.dir, ".env")}, {"shell", "cat .env"}}
			},
			unmediated: 1,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			agent := agentBin(t, tt.bin)
			docket := builtDocket(t)
			p := newAgentProjectWith(t, tt.agent, docket)
			t.Cleanup(func() { hookd.Stop(p.dir) })
			m := newModelServer(t, tt.api, p.script(tt.reads(p)...))
			env := tt.env(p, m.URL)
			if tt.agent == "gemini" { // the trust file is a JSON object
				writeFile(t, filepath.Join(p.home, ".gemini", "trustedFolders.json"), "{"+strconv.Quote(p.dir)+`: "TRUST_FOLDER"}`)
			}
			log := filepath.Join(t.TempDir(), "hook.log")
			out, code := p.run(append(env, "DOCKET_HOOK_LOG="+log), agent, tt.args...)
			t.Logf("%s: exit %d\n%s", tt.name, code, out)
			c := p.scriptCase()
			c.wantUnmediated = tt.unmediated
			p.check(m, c, out)

			lines, err := os.ReadFile(log)
			if err != nil {
				t.Fatalf("the hooks logged nothing: %v", err)
			}
			pre, daemon, post, postDaemon := 0, 0, 0, 0
			for _, l := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
				via := bytes.Contains(l, []byte(`"via":"hookd"`))
				switch {
				case bytes.Contains(l, []byte(`"msg":"hook pre"`)):
					pre++
					if via {
						daemon++
					}
				case bytes.Contains(l, []byte(`"msg":"hook post`)):
					post++
					if via {
						postDaemon++
					}
				}
			}
			t.Logf("%d post hooks logged, %d answered by the gate daemon", post, postDaemon)
			if postDaemon == 0 {
				t.Errorf("no post hook of %d answered by the gate daemon\n%s", post, lines)
			}
			decided := 0
			for _, pl := range p.receipts() {
				if pl.HookEvent == receipts.PreToolUse && !strings.HasPrefix(pl.SessionID, "docket-doctor-") {
					decided++
				}
			}
			t.Logf("%d pre hooks logged, %d answered by the gate daemon; %d decisions receipted", pre, daemon, decided)
			if pre != decided {
				t.Errorf("%d pre hooks logged a decision, %d decisions receipted; want the same", pre, decided)
			}
			if daemon == 0 || daemon >= pre {
				t.Errorf("%d of %d pre hooks answered by the gate daemon, want all but the first few (the first starts it)\n%s", daemon, pre, lines)
			}
		})
	}
}
