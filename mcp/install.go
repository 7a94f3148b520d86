package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/docketlog/docket/internal/durable"
)

// trustedList finds the list of trusted MCP servers in the default policy's
// mcp-ask-other-servers rule.
var trustedList = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)(@id\("mcp-ask-other-servers"\).*?unless \{ action in \[)([^\]]*)(\])`)
})

// TrustServer adds Action::"mcp__<server>" to the trusted servers of a
// policy written by docket init (the mcp-ask-other-servers rule), so that
// the server's tools are no longer asked about (which docket mcp, having
// no one to ask, denies). It reports whether the policy changed; a policy
// without that rule is returned unchanged with an error.
func TrustServer(src []byte, server string) ([]byte, bool, error) {
	if !safeName(server) {
		return nil, false, fmt.Errorf("server name %q: use letters, digits, '-' and '_' only", server)
	}
	m := trustedList().FindSubmatchIndex(src)
	if m == nil {
		return src, false, errors.New(`the policy has no mcp-ask-other-servers rule with an "unless { action in [...] }" list`)
	}
	entry := `Action::"mcp__` + server + `"`
	list := src[m[4]:m[5]]
	if bytes.Contains(list, []byte(entry)) {
		return src, false, nil
	}
	var out []byte
	out = append(out, src[:m[5]]...)
	if len(bytes.TrimSpace(list)) > 0 {
		out = append(out, ", "...)
	}
	out = append(out, entry...)
	out = append(out, src[m[5]:]...)
	return out, true, nil
}

// ClientEntry is an MCP client's configuration of one stdio server, as
// Claude Code's .mcp.json and Claude Desktop's claude_desktop_config.json
// both write it under "mcpServers".
type ClientEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Gated reports whether e already runs its server through docket mcp.
func (e ClientEntry) Gated() bool {
	return filepath.Base(e.Command) == "docket" && len(e.Args) > 0 && e.Args[0] == "mcp" && slices.Contains(e.Args, "--")
}

// InstallClient rewrites the entry name of an MCP client configuration
// file (created when missing) to run its server through docket mcp:
// command docket, args mcp -name NAME [extra...] -- SERVER_CMD.... serverCmd
// empty means the command already configured for name. Other servers and
// other members of the file are kept, as are the entry's env; an entry
// already gated is left alone. The file is replaced atomically, its
// previous content kept in path+".bak" — never clobbered.
func InstallClient(path, name, docket string, extra, serverCmd []string) (changed bool, err error) {
	if !safeName(name) {
		return false, fmt.Errorf("server name %q: use letters, digits, '-' and '_' only", name)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	doc := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return false, fmt.Errorf("%s: %v (not rewritten)", path, err)
		}
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := doc["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return false, fmt.Errorf("%s: mcpServers: %v (not rewritten)", path, err)
		}
	}
	var e ClientEntry
	var rest map[string]json.RawMessage
	if raw, ok := servers[name]; ok {
		if err := json.Unmarshal(raw, &e); err != nil {
			return false, fmt.Errorf("%s: mcpServers.%s: %v (not rewritten)", path, name, err)
		}
		_ = json.Unmarshal(raw, &rest)
		if t, ok := rest["type"]; ok && string(t) != `"stdio"` {
			return false, fmt.Errorf("%s: mcpServers.%s is not a stdio server; docket mcp gates stdio servers only", path, name)
		}
	}
	if e.Gated() {
		return false, nil
	}
	if len(serverCmd) == 0 {
		if e.Command == "" {
			return false, fmt.Errorf("%s has no server %q: give its command after --", path, name)
		}
		serverCmd = append([]string{e.Command}, e.Args...)
	}
	args := append([]string{"mcp", "-name", name}, extra...)
	args = append(append(args, "--"), serverCmd...)
	if rest == nil {
		rest = map[string]json.RawMessage{}
	}
	rest["command"], _ = json.Marshal(docket)
	rest["args"], _ = json.Marshal(args)
	servers[name], _ = json.Marshal(rest)
	doc["mcpServers"], _ = json.Marshal(servers)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return false, err
	}
	if len(old) > 0 {
		if err := durable.WriteFile(path+".bak", old, 0o600); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	return true, durable.WriteFile(path, append(out, '\n'), 0o644)
}

// ReadClient returns the entries of an MCP client configuration file.
func ReadClient(path string) (map[string]ClientEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		MCPServers map[string]ClientEntry `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return doc.MCPServers, nil
}
