package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsInstall(t *testing.T) {
	name, _, err := Claude.Installs()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	existing := `{"permissions":{"allow":["Bash(ls:*)"]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true"}]}],` +
		`"SessionEnd":[{"hooks":[{"type":"command","command":"/opt/bin/docket hook session-end","timeout":5}]}]}}`
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	added, err := s.Install(Claude, "/usr/bin/docket")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(added, ","); got != "PreToolUse,PostToolUse,PostToolUseFailure,SessionStart,Stop,SubagentStop" {
		t.Errorf("Install added %s; want every event but SessionEnd, which runs a docket hook already", got)
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after Write = %v, %v; want the file's 0600 kept", fi.Mode(), err)
	}

	s, err = ReadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	if added, err := s.Install(Claude, "/usr/bin/docket"); err != nil || len(added) != 0 {
		t.Errorf("second Install added %v, %v; want nothing", added, err)
	}
	if _, ok := s.m["permissions"]; !ok {
		t.Error("Install dropped the permissions")
	}
	pre := s.Installed("PreToolUse", "Bash", Pre)
	if len(pre) != 1 || pre[0].Command != "/usr/bin/docket hook pre" || pre[0].Matcher != "*" || pre[0].Timeout != HookTimeout {
		t.Errorf("Installed(PreToolUse, Bash) = %+v; want the one docket hook, matcher *, timeout %d", pre, HookTimeout)
	}
	if end := s.Installed("SessionEnd", "", SessionEnd); len(end) != 1 || end[0].Timeout != 5 {
		t.Errorf("Installed(SessionEnd) = %+v; want the existing hook kept", end)
	}
}

func TestSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, data, want string }{
		{"not JSON", `{"hooks":`, "not changing it"},
		{"hooks not an object", `{"hooks":[]}`, "hooks is not an object"},
		{"event not an array", `{"hooks":{"PostToolUse":{}}}`, "hooks.PostToolUse is not an array"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
		if err := os.WriteFile(path, []byte(tt.data), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSettings(path)
		if err == nil {
			_, err = s.Install(Claude, "docket")
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
	if _, _, err := Agent("cursor").Installs(); err == nil {
		t.Error("Installs() of an unknown agent succeeded")
	}
}

// TestAgentInstall checks each agent's config file, events, hook command
// and timeout unit: Gemini CLI counts milliseconds, the others seconds.
func TestAgentInstall(t *testing.T) {
	for _, tt := range []struct {
		agent   Agent
		path    string
		events  string
		pre     string
		timeout int
	}{
		{Claude, ".claude/settings.json", "PreToolUse,PostToolUse,PostToolUseFailure,SessionStart,SessionEnd,Stop,SubagentStop", "PreToolUse", 30},
		{Gemini, ".gemini/settings.json", "BeforeTool,AfterTool,SessionStart,SessionEnd", "BeforeTool", 30000},
		{Codex, ".codex/hooks.json", "PreToolUse,PostToolUse,SessionStart,SessionEnd", "PreToolUse", 30},
	} {
		t.Run(string(tt.agent), func(t *testing.T) {
			name, _, err := tt.agent.Installs()
			if err != nil || name != filepath.FromSlash(tt.path) {
				t.Fatalf("Installs() = %q, %v; want %s", name, err, tt.path)
			}
			s, err := ReadSettings(filepath.Join(t.TempDir(), name))
			if err != nil {
				t.Fatal(err)
			}
			added, err := s.Install(tt.agent, "/usr/bin/docket")
			if got := strings.Join(added, ","); err != nil || got != tt.events {
				t.Errorf("Install added %s, %v; want %s", got, err, tt.events)
			}
			pre := s.Installed(tt.pre, tt.agent.ShellTool(), Pre)
			want := "/usr/bin/docket hook pre -agent " + string(tt.agent)
			if tt.agent == Claude {
				want = "/usr/bin/docket hook pre"
			}
			if len(pre) != 1 || pre[0].Command != want || pre[0].Timeout != tt.timeout {
				t.Errorf("Installed(%s) = %+v; want command %q, timeout %d", tt.pre, pre, want, tt.timeout)
			}
			if added, _ := s.Install(tt.agent, "/usr/bin/docket"); len(added) != 0 {
				t.Errorf("second Install added %v; want nothing", added)
			}
		})
	}
}

func TestMatcherCovers(t *testing.T) {
	for _, tt := range []struct {
		matcher, tool string
		want          bool
	}{
		{"", "Bash", true}, {"*", "Bash", true}, {".*", "Bash", true},
		{"Bash", "Bash", true}, {"Edit|Bash", "Bash", true}, {"Edit | Bash", "Bash", true},
		{"Edit", "Bash", false}, {"Ba.*", "Bash", false},
	} {
		if got := matcherCovers(tt.matcher, tt.tool); got != tt.want {
			t.Errorf("matcherCovers(%q, %q) = %v, want %v", tt.matcher, tt.tool, got, tt.want)
		}
	}
}

// FuzzSettingsInstall checks that installing into any settings file either
// refuses it, leaving it alone, or installs every hook once, keeping what
// was there: a second install adds nothing.
func FuzzSettingsInstall(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"hooks":{}}`, `{"hooks":[]}`, `{"hooks":{"PreToolUse":{}}}`, `[]`, `{"hooks":`,
		`{"permissions":{"allow":["Bash(ls:*)"]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true"}]}]}}`,
		`{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"docket hook session-end","timeout":5}]}],"Other":1}}`,
		`{"hooks":{"PostToolUse":[1,{"hooks":"x"},{"hooks":[{"type":"command"}]}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, agent := range []Agent{Claude, Gemini, Codex} {
			fuzzInstall(t, agent, data)
		}
	})
}

func fuzzInstall(t *testing.T, agent Agent, data []byte) {
	_, events, _ := agent.Installs()
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSettings(path)
	if err == nil {
		_, err = s.Install(agent, "/bin/docket")
	}
	if err != nil {
		return
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	again, err := ReadSettings(path)
	if err != nil {
		t.Fatalf("%s settings written by Install do not read back: %v", agent, err)
	}
	if added, err := again.Install(agent, "/bin/docket"); err != nil || len(added) != 0 {
		t.Fatalf("second Install(%s) = %v, %v; want nothing added", agent, added, err)
	}
	for _, ev := range events {
		if len(again.Installed(ev.Event, "", ev.Kind)) == 0 {
			t.Fatalf("no docket hook %s for %s after Install(%s)", ev.Kind, ev.Event, agent)
		}
	}
	for k := range s.m {
		if _, ok := again.m[k]; !ok {
			t.Fatalf("Install(%s) dropped the member %q", agent, k)
		}
	}
}
