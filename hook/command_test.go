package hook

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHookProgram(t *testing.T) {
	tests := []struct {
		name, cmd, want string
	}{
		{"bare", "docket hook pre", "docket"},
		{"absolute", "/usr/local/bin/docket hook pre -agent codex", "/usr/local/bin/docket"},
		{"quoted", ShellQuote("/home/a b/docket") + " hook pre", "/home/a b/docket"},
		{"quoted with quote", ShellQuote("/x/it's/docket") + " hook post", "/x/it's/docket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HookProgram(tt.cmd); got != tt.want {
				t.Errorf("HookProgram(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}

func TestDefaultCommand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	same, other := t.TempDir(), t.TempDir()
	if err := os.Symlink(exe, filepath.Join(same, "docket")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "docket"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"this binary on PATH", same, "docket"},
		{"another docket on PATH", other, ShellQuote(exe)},
		{"no docket on PATH", t.TempDir(), ShellQuote(exe)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", tt.path)
			if got := DefaultCommand(exe); got != tt.want {
				t.Errorf("DefaultCommand(%s) with PATH=%s = %q, want %q", exe, tt.path, got, tt.want)
			}
		})
	}
}
