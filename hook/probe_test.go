package hook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAgent: doctor's checks of one agent, with a stand-in docket
// (a script) behind the installed hooks: a pre hook that blocks passes, one
// that lets the call run or blocks without a reason fails, a project
// without the pre hook fails with the fix, missing record hooks warn.
func TestCheckAgent(t *testing.T) {
	tests := []struct {
		name    string
		script  string // the stand-in docket; "" installs no hooks
		wantErr string // in the failing check's error; "" all pass
	}{
		{"blocks", "echo 'docket: denied' >&2; exit 2", ""},
		{"allows", "exit 0", "exit 0: the call was allowed"},
		{"exit 2 without reason", "exit 2", "without a reason"},
		{"crashes", "exit 1", "lets the call run"},
		{"not installed", "", "the gate is not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			project := t.TempDir()
			if tt.script != "" {
				bin := filepath.Join(t.TempDir(), "docket")
				if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tt.script+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				if _, added, err := InstallProject(project, Claude, bin); err != nil || len(added) != 7 {
					t.Fatalf("InstallProject = %v, %v, want 7 events", added, err)
				}
			}
			var failed []Check
			for _, c := range CheckAgent(t.Context(), project, Claude, NewProbeSession()) {
				if c.Err != nil && !c.Warning {
					failed = append(failed, c)
				}
			}
			switch {
			case tt.wantErr == "" && len(failed) > 0:
				t.Errorf("CheckAgent = %s: %v, want every check passed", failed[0].Name, failed[0].Err)
			case tt.wantErr != "" && (len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), tt.wantErr)):
				t.Errorf("CheckAgent failed %+v, want one failure with %q", failed, tt.wantErr)
			case tt.script == "" && !errors.As(failed[0].Err, new(*UntrustedError)):
				t.Errorf("CheckAgent without hooks = %v, want an *UntrustedError with the fix", failed[0].Err)
			}
		})
	}

	// Only the pre hook installed: the record hooks are warnings, not failures.
	project := t.TempDir()
	name, _, _ := Claude.Installs()
	os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	bin := filepath.Join(t.TempDir(), "docket")
	os.WriteFile(bin, []byte("#!/bin/sh\necho denied >&2; exit 2\n"), 0o755)
	os.WriteFile(filepath.Join(project, name), []byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"`+bin+` hook pre"}]}]}}`), 0o644)
	warnings, absolute := 0, 0
	for _, c := range CheckAgent(t.Context(), project, Claude, NewProbeSession()) {
		switch {
		case c.Warning && strings.Contains(c.Err.Error(), "runs "+bin+" by its absolute path"):
			absolute++
		case c.Warning:
			warnings++
		case c.Err != nil:
			t.Errorf("CheckAgent(pre only): %s: %v, want it passed", c.Name, c.Err)
		}
	}
	if absolute != 1 {
		t.Errorf("CheckAgent(pre hook %s) absolute-path warnings = %d, want 1", bin, absolute)
	}
	if warnings != 6 {
		t.Errorf("CheckAgent(pre only) warnings = %d, want 6 (post, post-failure, session start and end, stop, subagent stop)", warnings)
	}
}

func TestParseAgents(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Agent
		err      bool
	}{
		{"one", "claude", []Agent{Claude}, false},
		{"repeated, spaced", "gemini, codex,gemini", []Agent{Gemini, Codex}, false},
		{"all", "all", Agents, false},
		{"unknown", "claude,cursor", nil, true},
		{"empty", "", nil, true},
		{"trailing comma", "claude,", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAgents(tt.in)
			if (err != nil) != tt.err || strings.Join(names(got), ",") != strings.Join(names(tt.want), ",") {
				t.Errorf("ParseAgents(%q) = %v, %v, want %v (error %v)", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func names(as []Agent) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(a))
	}
	return out
}
