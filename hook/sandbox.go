package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/BurntSushi/toml"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/store"
)

// InitConfine turns confinement on for the project (docket init -confine):
// the configuration's confine, and, for Codex and Gemini CLI, their own
// sandbox configured from the same confinement (Codex: sandbox_mode
// workspace-write and the tool directories as writable roots; Gemini CLI:
// tools.sandbox, its allowed paths, and on macOS a Seatbelt profile
// written from the confinement). It returns one line per change.
func InitConfine(ctx context.Context, s *store.Store, agents []Agent) ([]string, error) {
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	var msgs []string
	if !cfg.Confine {
		cfg.Confine = true
		if err := s.WriteConfig(cfg); err != nil {
			return nil, err
		}
		msgs = append(msgs, "confine: shell calls run under docket exec (config confine)")
	}
	c, _, err := confine.ForProject(ctx, s.Project())
	if err != nil {
		return nil, err
	}
	d, err := c.Digest()
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, "confinement "+d+" ("+confine.Support().String()+")")
	for _, a := range agents {
		var msg string
		switch a {
		case Codex:
			msg, err = codexSandbox(s.Project(), c)
		case Gemini:
			msg, err = geminiSandbox(s.Project(), c)
		}
		if err != nil {
			return nil, err
		}
		if msg != "" {
			msgs = append(msgs, msg)
		}
	}
	return msgs, nil
}

// codexProjectConfig is the project's Codex configuration file, beside its hooks.
func codexProjectConfig(project string) string {
	return filepath.Join(project, ".codex", "config.toml")
}

// codexSandbox sets sandbox_mode = "workspace-write" with the
// confinement's tool directories as writable roots and network access on
// (destinations are the analyser's) in .codex/config.toml, keeping the
// rest of the file.
func codexSandbox(project string, c *confine.Confinement) (string, error) {
	path := codexProjectConfig(project)
	m := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if _, err := toml.Decode(string(data), &m); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	m["sandbox_mode"] = "workspace-write"
	ws, _ := m["sandbox_workspace_write"].(map[string]any)
	if ws == nil {
		ws = map[string]any{}
	}
	ws["writable_roots"] = c.ToolWrite
	ws["network_access"] = true
	m["sandbox_workspace_write"] = ws
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(m); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return "codex: sandbox_mode workspace-write in .codex/config.toml", nil
}

// geminiSandbox turns Gemini CLI's sandbox on in .gemini/settings.json
// (tools.sandbox, tools.sandboxAllowedPaths, tools.sandboxNetworkAccess)
// and, on macOS, writes the confinement's Seatbelt profile as
// .gemini/sandbox-macos-docket.sb with SEATBELT_PROFILE=docket in
// .gemini/.env.
func geminiSandbox(project string, c *confine.Confinement) (string, error) {
	path := filepath.Join(project, ".gemini", "settings.json")
	m := map[string]any{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &m); err != nil {
			return "", fmt.Errorf("%s is not a JSON object: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	tools, _ := m["tools"].(map[string]any)
	if tools == nil {
		tools = map[string]any{}
	}
	tools["sandbox"] = true
	tools["sandboxAllowedPaths"] = c.ToolWrite
	tools["sandboxNetworkAccess"] = true
	m["tools"] = tools
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	if runtime.GOOS == "darwin" {
		dir := filepath.Dir(path)
		if err := os.WriteFile(filepath.Join(dir, "sandbox-macos-docket.sb"), []byte(c.SeatbeltProfile()), 0o644); err != nil {
			return "", err
		}
		if err := appendLine(filepath.Join(dir, ".env"), "SEATBELT_PROFILE=docket"); err != nil {
			return "", err
		}
	}
	return "gemini: tools.sandbox on in .gemini/settings.json", nil
}

func appendLine(path, line string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if string(bytes.TrimSpace(l)) == line {
			return nil
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	return os.WriteFile(path, append(data, line+"\n"...), 0o600)
}

// ConfineCheck is one line docket doctor prints about confinement.
type ConfineCheck struct {
	Name   string
	Err    error  // a FAIL
	Detail string // said after "ok"
}

// CheckConfine says whether this machine can confine the project's
// commands, and, when the project requires it, whether the agents' own
// sandboxes are on: Codex's sandbox_mode (the project's .codex/config.toml,
// else $CODEX_HOME/config.toml) must not be danger-full-access nor unset,
// and Gemini CLI's tools.sandbox (or GEMINI_SANDBOX) must be on.
func CheckConfine(s *store.Store, agents []Agent, getenv func(string) string) []ConfineCheck {
	cfg, err := s.Config()
	if err != nil {
		return []ConfineCheck{{Name: "confinement", Err: err}}
	}
	st := confine.Support()
	if !cfg.Confine {
		return []ConfineCheck{{Name: "confinement", Detail: ": off (docket init -confine turns it on); this machine: " + st.String()}}
	}
	var out []ConfineCheck
	if st.Mechanism == "" {
		out = append(out, ConfineCheck{Name: "confinement", Err: &UntrustedError{Reason: "the project confines its commands and this machine cannot: " + st.Detail + "; every shell call is denied",
			Fix: "run on a kernel with Landlock (ABI 3 or later) and unprivileged user namespaces, or turn confine off in .docket/config.json"}})
	} else {
		out = append(out, ConfineCheck{Name: "confinement", Detail: ": " + st.String()})
	}
	for _, a := range agents {
		switch a {
		case Codex:
			out = append(out, ConfineCheck{Name: "codex sandbox", Err: codexSandboxOff(s.Project(), getenv)})
		case Gemini:
			out = append(out, ConfineCheck{Name: "gemini sandbox", Err: geminiSandboxOff(s.Project(), getenv)})
		}
	}
	return out
}

func codexSandboxOff(project string, getenv func(string) string) error {
	home := getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(getenv("HOME"), ".codex")
	}
	mode := ""
	for _, p := range []string{codexProjectConfig(project), filepath.Join(home, "config.toml")} {
		var m struct {
			SandboxMode string `toml:"sandbox_mode"`
		}
		if _, err := toml.DecodeFile(p, &m); err == nil && m.SandboxMode != "" {
			mode = m.SandboxMode
			break
		}
	}
	switch mode {
	case "workspace-write", "read-only":
		return nil
	}
	return &UntrustedError{Agent: Codex, Reason: fmt.Sprintf("codex sandbox_mode is %q: Codex runs commands unsandboxed", mode), Fix: "docket init -agent codex -confine"}
}

func geminiSandboxOff(project string, getenv func(string) string) error {
	if v := getenv("GEMINI_SANDBOX"); v != "" && v != "false" && v != "0" {
		return nil
	}
	var m struct {
		Tools struct {
			Sandbox any `json:"sandbox"`
		} `json:"tools"`
	}
	data, _ := os.ReadFile(filepath.Join(project, ".gemini", "settings.json"))
	_ = json.Unmarshal(data, &m)
	switch v := m.Tools.Sandbox.(type) {
	case bool:
		if v {
			return nil
		}
	case string:
		if v != "" && v != "false" {
			return nil
		}
	}
	return &UntrustedError{Agent: Gemini, Reason: "gemini tools.sandbox is off: Gemini CLI runs commands unsandboxed", Fix: "docket init -agent gemini -confine"}
}
