package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// Find returns the records agent kept of sessions in project: the files
// the agent writes for a project whatever its hooks did, so that a session
// that ran no hook at all (Gemini CLI with --skip-trust, Codex in an
// untrusted project, hooks disabled) is found after the fact. home is the
// user's home directory; CLAUDE_CONFIG_DIR, CODEX_HOME and GEMINI_CLI_HOME
// move the agents' directories as the agents themselves do. At most
// MaxFiles records are returned.
//
//   - Claude Code: ~/.claude/projects/<project path, every character but
//     letters and digits made '-'>/*.jsonl
//   - Codex: ~/.codex/sessions/*/*/*/rollout-*.jsonl whose session_meta
//     names project as its cwd
//   - Gemini CLI: ~/.gemini/tmp/*/chats/session-*.jsonl whose projectHash
//     is the SHA-256 of project
func Find(ctx context.Context, agent, project, home string) ([]string, error) {
	var pattern string
	var keep func(*Record) bool
	switch agent {
	case Claude:
		dir := os.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".claude")
		}
		munged := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(project, "-")
		pattern = filepath.Join(dir, "projects", munged, "*.jsonl")
	case Codex:
		dir := os.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		pattern = filepath.Join(dir, "sessions", "*", "*", "*", "rollout-*.jsonl")
		keep = func(r *Record) bool { return r.Cwd == project }
	case Gemini:
		dir := os.Getenv("GEMINI_CLI_HOME")
		if dir == "" {
			dir = home
		}
		pattern = filepath.Join(dir, ".gemini", "tmp", "*", "chats", "session-*.jsonl")
		sum := sha256.Sum256([]byte(project))
		want := hex.EncodeToString(sum[:])
		keep = func(r *Record) bool { return r.ProjectHash == want }
	default:
		return nil, fmt.Errorf("finding records: unknown agent %q", agent)
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var out []string
	for _, f := range files {
		if !statRegular(f) {
			continue
		}
		if keep != nil {
			r, err := Read(ctx, agent, f)
			if err != nil || !keep(r) {
				continue // another project's, or unreadable: not ours to name
			}
		}
		if len(out) == MaxFiles {
			return nil, fmt.Errorf("finding records: more than %d in %s", MaxFiles, filepath.Dir(pattern))
		}
		out = append(out, f)
	}
	return out, nil
}
