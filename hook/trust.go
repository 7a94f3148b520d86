package hook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// UntrustedError is an agent setup in which the project's hooks silently
// never run. Fix is the one line that tells the user what to do.
type UntrustedError struct {
	Agent  Agent
	Reason string
	Fix    string
}

func (e *UntrustedError) Error() string { return e.Reason }

// TrustAdvice says what the user must still do, beyond `docket init`, for
// the agent to run the project's hooks; "" when nothing.
func TrustAdvice(a Agent, project string) string {
	switch a {
	case Gemini:
		return "Gemini CLI runs project hooks only in a trusted folder: run gemini in " + project +
			" once and choose to trust the folder (with --skip-trust it runs without them); docket doctor checks it"
	case Codex:
		return "Codex runs project hooks only in a trusted project and once the hooks are trusted: run codex in " + project +
			", trust the project, then type /hooks and trust the docket hooks; until then it runs no hook, with no warning; docket doctor checks it"
	}
	return ""
}

// CheckTrust reads the agent's own trust files and reports whether the
// agent will run the project's hooks. It returns an *UntrustedError when
// the hooks would silently be skipped. getenv is os.Getenv in use; the
// files are found as the agent finds them (HOME, GEMINI_CLI_HOME,
// GEMINI_CLI_TRUSTED_FOLDERS_PATH, CODEX_HOME).
func CheckTrust(a Agent, project string, getenv func(string) string) error {
	switch a {
	case Gemini:
		return checkGeminiTrust(project, getenv)
	case Codex:
		return checkCodexTrust(project, getenv)
	}
	return nil
}

// checkGeminiTrust follows Gemini CLI's folder trust: on unless the user's
// settings turn security.folderTrust.enabled off; the longest rule of
// trustedFolders.json containing the project decides (TRUST_PARENT rules
// cover the parent of the path they name).
func checkGeminiTrust(project string, getenv func(string) string) error {
	fix := fmt.Sprintf("run gemini in %s and choose to trust the folder (or add %q: \"TRUST_FOLDER\" to %%s)", project, project)
	switch getenv("GEMINI_CLI_TRUST_WORKSPACE") {
	case "false":
		return &UntrustedError{Gemini, "GEMINI_CLI_TRUST_WORKSPACE=false: Gemini CLI treats every folder as untrusted and runs no project hook", "unset GEMINI_CLI_TRUST_WORKSPACE"}
	}
	if getenv("GEMINI_RESTRICTED_MODE") == "true" {
		return &UntrustedError{Gemini, "GEMINI_RESTRICTED_MODE=true: Gemini CLI runs no project hook", "unset GEMINI_RESTRICTED_MODE"}
	}
	home := getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = getenv("HOME")
	}
	dir := filepath.Join(home, ".gemini")
	// The hooks themselves can be turned off, in the user's settings or
	// the project's: hooksConfig.enabled false, or a hook's command listed
	// in hooksConfig.disabled.
	var user geminiSettings
	for _, path := range []string{filepath.Join(dir, "settings.json"), filepath.Join(project, ".gemini", "settings.json")} {
		var s geminiSettings
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("reading %s: %v", path, err)
		}
		if e := s.HooksConfig.Enabled; e != nil && !*e {
			return &UntrustedError{Gemini, "hooksConfig.enabled is false in " + path + ": Gemini CLI runs no hook", "remove hooksConfig.enabled from " + path}
		}
		for _, d := range s.HooksConfig.Disabled {
			for _, k := range []Kind{Pre, Post, SessionStart, SessionEnd} {
				if runsDocketHook(d, k) {
					return &UntrustedError{Gemini, "hooksConfig.disabled in " + path + " turns off " + d, "remove it from hooksConfig.disabled in " + path}
				}
			}
		}
		if path == filepath.Join(dir, "settings.json") {
			user = s
		}
	}
	if e := user.Security.FolderTrust.Enabled; e != nil && !*e {
		return nil // folder trust is off: every folder is trusted
	}
	path := getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	if path == "" {
		path = filepath.Join(dir, "trustedFolders.json")
	}
	fix = fmt.Sprintf(fix, path)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &UntrustedError{Gemini, "the folder is not trusted (no " + path + "): Gemini CLI refuses to start, and with --skip-trust runs without the project's hooks", fix}
	}
	if err != nil {
		return err
	}
	var rules map[string]string
	if err := json.Unmarshal(data, &rules); err != nil {
		return fmt.Errorf("reading %s: %v (Gemini CLI will not start)", path, err)
	}
	real := realPath(project)
	best, level := -1, ""
	for rule, l := range rules {
		eff := rule
		if l == "TRUST_PARENT" {
			eff = filepath.Dir(rule)
		}
		if within(realPath(eff), real) && len(rule) > best {
			best, level = len(rule), l
		}
	}
	switch level {
	case "TRUST_FOLDER", "TRUST_PARENT":
		return nil
	case "DO_NOT_TRUST":
		return &UntrustedError{Gemini, "the folder is marked DO_NOT_TRUST in " + path + ": Gemini CLI runs without the project's hooks", fix}
	}
	return &UntrustedError{Gemini, "the folder is not trusted in " + path + ": Gemini CLI refuses to start, and with --skip-trust runs without the project's hooks", fix}
}

// geminiSettings is what Docket reads of Gemini CLI's settings.json.
type geminiSettings struct {
	Security struct {
		FolderTrust struct {
			Enabled *bool `json:"enabled"`
		} `json:"folderTrust"`
	} `json:"security"`
	HooksConfig struct {
		Enabled  *bool    `json:"enabled"`
		Disabled []string `json:"disabled"`
	} `json:"hooksConfig"`
}

// codexConfig is what Docket reads of Codex's config.toml.
type codexConfig struct {
	Features struct {
		Hooks      *bool `toml:"hooks"`
		CodexHooks *bool `toml:"codex_hooks"` // the legacy name
	} `toml:"features"`
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			TrustedHash string `toml:"trusted_hash"`
			Enabled     *bool  `toml:"enabled"`
		} `toml:"state"`
	} `toml:"hooks"`
}

// checkCodexTrust follows Codex: project hooks (.codex/hooks.json) load
// only when the project (or a folder above it) is trusted in
// $CODEX_HOME/config.toml, and each hook runs only once it is trusted
// there too ([hooks.state."<hooks.json>:<event>:<group>:<handler>"] with a
// trusted_hash). Otherwise Codex runs no hook and says nothing.
func checkCodexTrust(project string, getenv func(string) string) error {
	home := getenv("CODEX_HOME")
	if home == "" {
		home = filepath.Join(getenv("HOME"), ".codex")
	}
	path := filepath.Join(home, "config.toml")
	var cfg codexConfig
	if _, err := toml.DecodeFile(path, &cfg); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %v", path, err)
	}
	if h := cmp.Or(cfg.Features.Hooks, cfg.Features.CodexHooks); h != nil && !*h {
		return &UntrustedError{Codex, "features.hooks is false in " + path + ": Codex runs no hook", "remove hooks = false from [features] in " + path}
	}
	trusted := ""
	for dir := project; ; dir = filepath.Dir(dir) {
		if p, ok := cfg.Projects[dir]; ok && p.TrustLevel != "" {
			trusted = p.TrustLevel
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if trusted != "trusted" {
		return &UntrustedError{Codex, fmt.Sprintf("the project is not trusted in %s: Codex loads no project hook, with no warning", path),
			"run codex in " + project + " and trust the project (or codex exec --trust once)"}
	}
	name, events, _ := Codex.Installs()
	hooksPath := filepath.Join(project, name)
	s, err := ReadSettings(hooksPath)
	if err != nil {
		return err
	}
	hooks, _ := s.m["hooks"].(map[string]any)
	var untrusted []string
	for _, ev := range events {
		groups, _ := hooks[ev.Event].([]any)
		for gi, g := range groups {
			gm, _ := g.(map[string]any)
			hs, _ := gm["hooks"].([]any)
			for hi, h := range hs {
				hm, _ := h.(map[string]any)
				cmd, _ := hm["command"].(string)
				if !runsDocketHook(cmd, ev.Kind) {
					continue
				}
				key := fmt.Sprintf("%s:%s:%d:%d", hooksPath, snake(ev.Event), gi, hi)
				st, ok := cfg.Hooks.State[key]
				switch {
				case !ok || st.TrustedHash == "":
					untrusted = append(untrusted, ev.Event)
				case st.Enabled != nil && !*st.Enabled:
					untrusted = append(untrusted, ev.Event+" (disabled)")
				case st.TrustedHash != codexHookHash(ev.Event, gm, hm):
					untrusted = append(untrusted, ev.Event+" (changed since trusted)")
				}
			}
		}
	}
	if len(untrusted) > 0 {
		return &UntrustedError{Codex, fmt.Sprintf("the docket hooks for %s are not trusted in %s: Codex skips them, with no warning", strings.Join(untrusted, ", "), path),
			"run codex in " + project + ", type /hooks and trust the docket hooks"}
	}
	return nil
}

// codexHookHash is the hash Codex trusts a hook by: SHA-256 over the
// compact JSON, keys sorted, of the hook's normalized identity
// {event_name, matcher, hooks: [the one handler, timeout normalized]}.
// A trusted_hash that differs means the hook changed since it was
// trusted, and Codex skips it.
func codexHookHash(event string, group, handler map[string]any) string {
	timeout := int64(600)
	switch t := handler["timeout"].(type) {
	case interface{ Int64() (int64, error) }:
		timeout, _ = t.Int64()
	case int:
		timeout = int64(t)
	}
	timeout = max(timeout, 1)
	if event == "SessionEnd" {
		timeout = min(timeout, 3) // Codex clamps SessionEnd hooks to 3 s
	}
	async, _ := handler["async"].(bool)
	h := map[string]any{"type": "command", "command": handler["command"], "timeout": timeout, "async": async}
	if m, ok := handler["statusMessage"].(string); ok {
		h["statusMessage"] = m
	}
	id := map[string]any{"event_name": snake(event), "hooks": []any{h}}
	if m, ok := group["matcher"].(string); ok {
		id["matcher"] = m
	}
	// encoding/json sorts map keys; serde_json leaves <, > and & alone.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(id)
	return sha256Ref(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// snake turns an event name into Codex's key form: PreToolUse -> pre_tool_use.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether path is dir or below it.
func within(dir, path string) bool {
	r, err := filepath.Rel(dir, path)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}
