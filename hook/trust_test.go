package hook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodexHookHash checks the hash Docket computes for a hook against the
// currentHash Codex 0.169 itself reported (app-server hooks/list) for the
// hooks.json `docket init -agent codex -command /tmp/cxp/docket` wrote.
func TestCodexHookHash(t *testing.T) {
	for _, tt := range []struct {
		event, kind, matcher, want string
	}{
		{"PreToolUse", "pre", "*", "sha256:57219425e167aa13acb34339f3d7cc04453631b9d3b06ab0db54f618acad728a"},
		{"PostToolUse", "post", "*", "sha256:a73da1b7f79ebf31d6fdbdd5463fb400d6b5d04e01424b63e39ba2160c214d27"},
		{"SessionStart", "session-start", "", "sha256:1dbbfae3d5e9a70ca8096302e8a4a6be0d0d9f07742f9626543223c83c0ffc0f"},
		// Codex clamps a SessionEnd hook's timeout to 3 s, and hashes that.
		{"SessionEnd", "session-end", "", "sha256:075be12f2e6b30b453be31fa95099b180f75438226ec092915621362c3400941"},
	} {
		group := map[string]any{}
		if tt.matcher != "" {
			group["matcher"] = tt.matcher
		}
		handler := map[string]any{"type": "command", "command": "/tmp/cxp/docket hook " + tt.kind + " -agent codex", "timeout": 30}
		if got := codexHookHash(tt.event, group, handler); got != tt.want {
			t.Errorf("codexHookHash(%s) = %s, want %s", tt.event, got, tt.want)
		}
	}
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestGeminiTrust(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(t.TempDir(), "work", "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	trustFile := filepath.Join(home, ".gemini", "trustedFolders.json")
	for _, tt := range []struct {
		name     string
		folders  string // "" for no file
		settings string
		env      map[string]string
		trusted  bool
	}{
		{name: "no trust file"},
		{name: "folder trusted", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, project), trusted: true},
		{name: "parent trusted", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, filepath.Dir(project)), trusted: true},
		{name: "TRUST_PARENT names a sibling", folders: fmt.Sprintf(`{%q: "TRUST_PARENT"}`, filepath.Join(filepath.Dir(project), "other")), trusted: true},
		{name: "another folder trusted", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, filepath.Join(filepath.Dir(project), "other"))},
		{name: "longest rule distrusts", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER", %q: "DO_NOT_TRUST"}`, filepath.Dir(project), project)},
		{name: "folder trust off", settings: `{"security":{"folderTrust":{"enabled":false}}}`, trusted: true},
		{name: "hooks off", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, project), settings: `{"hooksConfig":{"enabled":false}}`},
		{name: "docket hook disabled", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, project), settings: `{"hooksConfig":{"disabled":["/usr/bin/docket hook pre -agent gemini"]}}`},
		{name: "another hook disabled", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, project), settings: `{"hooksConfig":{"disabled":["lint"]}}`, trusted: true},
		{name: "env distrusts", folders: fmt.Sprintf(`{%q: "TRUST_FOLDER"}`, project), env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "false"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(home, ".gemini"))
			if tt.folders != "" {
				writeTestFile(t, trustFile, tt.folders)
			}
			if tt.settings != "" {
				writeTestFile(t, filepath.Join(home, ".gemini", "settings.json"), tt.settings)
			}
			e := map[string]string{"HOME": home}
			for k, v := range tt.env {
				e[k] = v
			}
			err := CheckTrust(Gemini, project, env(e))
			var ue *UntrustedError
			switch {
			case tt.trusted && err != nil:
				t.Errorf("CheckTrust = %v, want trusted", err)
			case !tt.trusted && !errors.As(err, &ue):
				t.Errorf("CheckTrust = %v, want an UntrustedError", err)
			case !tt.trusted && ue.Fix == "":
				t.Errorf("CheckTrust = %v with no fix", err)
			}
		})
	}
}

func TestCodexTrust(t *testing.T) {
	home := t.TempDir()
	project := t.TempDir()
	s, err := ReadSettings(filepath.Join(project, ".codex", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(Codex, "/tmp/cxp/docket"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(project, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(); err != nil {
		t.Fatal(err)
	}
	hooksPath := filepath.Join(project, ".codex", "hooks.json")
	trustProject := fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", project)
	state := func(event, hash string) string {
		return fmt.Sprintf("[hooks.state.%q]\ntrusted_hash = %q\n", hooksPath+":"+event+":0:0", hash)
	}
	allHooks := state("pre_tool_use", "sha256:57219425e167aa13acb34339f3d7cc04453631b9d3b06ab0db54f618acad728a") +
		state("post_tool_use", "sha256:a73da1b7f79ebf31d6fdbdd5463fb400d6b5d04e01424b63e39ba2160c214d27") +
		state("session_start", "sha256:1dbbfae3d5e9a70ca8096302e8a4a6be0d0d9f07742f9626543223c83c0ffc0f") +
		state("session_end", "sha256:075be12f2e6b30b453be31fa95099b180f75438226ec092915621362c3400941")
	for _, tt := range []struct {
		name, config, want string // want: "" trusted, else in the error
	}{
		{"no config", "", "project is not trusted"},
		{"hooks feature off", "[features]\nhooks = false\n" + trustProject + allHooks, "features.hooks is false"},
		{"project untrusted", fmt.Sprintf("[projects.%q]\ntrust_level = \"untrusted\"\n", project) + allHooks, "project is not trusted"},
		{"hooks untrusted", trustProject, "PreToolUse, PostToolUse, SessionStart, SessionEnd are not trusted"},
		{"one hook untrusted", trustProject + state("pre_tool_use", "sha256:57219425e167aa13acb34339f3d7cc04453631b9d3b06ab0db54f618acad728a"), "PostToolUse, SessionStart, SessionEnd are not trusted"},
		{"hook changed", trustProject + strings.Replace(allHooks, "5721", "0000", 1), "PreToolUse (changed since trusted)"},
		{"disabled", trustProject + allHooks + "enabled = false\n", "SessionEnd (disabled)"},
		{"trusted", trustProject + allHooks, ""},
		{"parent trusted", fmt.Sprintf("[projects.%q]\ntrust_level = \"trusted\"\n", filepath.Dir(project)) + allHooks, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(filepath.Join(home, "config.toml"))
			if tt.config != "" {
				writeTestFile(t, filepath.Join(home, "config.toml"), tt.config)
			}
			err := CheckTrust(Codex, project, env(map[string]string{"CODEX_HOME": home}))
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckTrust = %v, want trusted", err)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) || ue.Fix == "" {
				t.Errorf("CheckTrust = %v, want an UntrustedError saying %q, with a fix", err, tt.want)
			}
		})
	}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzCheckTrust feeds arbitrary agent trust files to CheckTrust: it must
// never panic, and never call a project trusted by a file it cannot read.
func FuzzCheckTrust(f *testing.F) {
	f.Add([]byte(`{"/p": "TRUST_FOLDER"}`), []byte("[projects.\"/p\"]\ntrust_level = \"trusted\"\n"))
	f.Add([]byte(`{"/": "TRUST_PARENT", "/p": "DO_NOT_TRUST"}`), []byte("[hooks.state.\"/p/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = 1\n"))
	f.Add([]byte(`[]`), []byte(`projects = 3`))
	f.Fuzz(func(t *testing.T, folders, config []byte) {
		home := t.TempDir()
		writeTestFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), string(folders))
		writeTestFile(t, filepath.Join(home, ".codex", "config.toml"), string(config))
		e := env(map[string]string{"HOME": home})
		if err := CheckTrust(Gemini, "/p", e); err == nil && !strings.Contains(string(folders), "TRUST") {
			t.Errorf("CheckTrust(Gemini) trusted /p by %q", folders)
		}
		if err := CheckTrust(Codex, "/p", e); err == nil && !strings.Contains(string(config), "trusted") {
			t.Errorf("CheckTrust(Codex) trusted /p by %q", config)
		}
	})
}
