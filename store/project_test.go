package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFindProject(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "p")
	deep := filepath.Join(project, "a", "b")
	outside := filepath.Join(root, "q")
	for _, d := range []string{filepath.Join(project, DirName), deep, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, wd, env string
		want          string // "" : ErrNoProject
	}{
		{name: "the root", wd: project, want: project},
		{name: "below it", wd: deep, want: project},
		{name: "outside", wd: outside},
		{name: "CLAUDE_PROJECT_DIR", wd: outside, env: project, want: project},
		{name: "CLAUDE_PROJECT_DIR without a store", wd: deep, env: outside},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.wd)
			t.Setenv("CLAUDE_PROJECT_DIR", tc.env)
			got, err := FindProject()
			switch {
			case tc.want == "" && !errors.Is(err, ErrNoProject):
				t.Errorf("FindProject() = %q, %v, want ErrNoProject", got, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("FindProject() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}
