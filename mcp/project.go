package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/store"
)

// This file is the project side of MCP clients' configuration, as `docket
// init -mcp` and `docket doctor` need it: putting a server behind docket
// mcp (Install) and proving that each gated server of a project blocks
// (ProbeServers).

// ProjectConfig is the name of Claude Code's project MCP configuration.
const ProjectConfig = ".mcp.json"

// DesktopConfig returns the path of Claude Desktop's MCP configuration.
func DesktopConfig() (string, error) {
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json"), nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "Claude", "claude_desktop_config.json"), nil
}

// Installed is what Install did.
type Installed struct {
	// Config is the MCP client configuration Install rewrote or kept.
	Config string
	// Changed: the entry was rewritten.
	Changed bool
	// Backup is where the previous content of Config was kept when a
	// rewrite replaced a file; "" when there was none to keep.
	Backup string
	// Trusted is the policy file in which the server was trusted, "" when
	// it was not.
	Trusted string
	// Untrusted: the server could not be trusted in the default policy
	// (there is none, or it does not parse): the user must trust it, or
	// its calls are denied.
	Untrusted bool
}

// Install runs MCP server name through docket mcp (the binary docket, for
// the project of st): its entry in the MCP client configuration config
// ("" for the project's .mcp.json, "desktop" for Claude Desktop's) is
// rewritten to start docket mcp with serverCmd (or the command already
// configured), and name is trusted in the project's default policy file
// (TrustServer) when that file is there to edit.
func Install(st *store.Store, name, config, docket string, serverCmd []string) (Installed, error) {
	var err error
	switch config {
	case "":
		config = filepath.Join(st.Project(), ProjectConfig)
	case "desktop":
		if config, err = DesktopConfig(); err != nil {
			return Installed{}, err
		}
	}
	in := Installed{Config: config}
	fi, statErr := os.Stat(config)
	if in.Changed, err = InstallClient(config, name, docket, []string{"-dir", st.Project()}, serverCmd); err != nil {
		return in, err
	}
	if in.Changed && statErr == nil && fi.Size() > 0 {
		in.Backup = config + ".bak"
	}
	src, err := st.ReadPolicyFile(policy.DefaultName)
	if err != nil {
		in.Untrusted = true
		return in, nil
	}
	out, trusted, err := TrustServer(src, name)
	if err != nil || !trusted {
		in.Untrusted = err != nil
		return in, nil
	}
	in.Trusted, err = st.WritePolicyFile(policy.DefaultName, out)
	return in, err
}

// ServerCheck is the result of probing one server of a project's MCP
// configuration.
type ServerCheck struct {
	Name string
	// Gated: the server runs through docket mcp. An ungated server is not
	// probed.
	Gated bool
	// Err is why a gated server did not block the probe call; nil when it
	// did.
	Err error
}

// ProbeServers checks the MCP servers of the project's .mcp.json: each one
// that runs through docket mcp is started exactly as configured and sent a
// tools/call with a malformed PIC proposal, which the gate must deny
// without the server seeing it. Server NAME's relay records its session as
// session-mcp-NAME (session is the doctor run's, hook.NewProbeSession),
// which it starts and ends itself. The checks are in name order; a project
// without .mcp.json has none.
func ProbeServers(ctx context.Context, project, session string) ([]ServerCheck, error) {
	entries, err := ReadClient(filepath.Join(project, ProjectConfig))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	checks := make([]ServerCheck, len(names))
	for i, n := range names {
		checks[i] = ServerCheck{Name: n, Gated: entries[n].Gated()}
		if checks[i].Gated {
			checks[i].Err = Probe(ctx, entries[n], session+"-mcp-"+n)
		}
	}
	return checks, nil
}

// Probe runs a gated MCP client entry, its receipts in session, and checks
// that a tools/call whose PIC proposal is malformed is answered with
// Docket's denial.
func Probe(ctx context.Context, e ClientEntry, session string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append([]string{"mcp", "-session", session, "-grace", "1s"}, e.Args[1:]...)
	cmd := exec.CommandContext(ctx, e.Command, args...)
	cmd.Env = os.Environ()
	for k, v := range e.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":"docket-doctor","method":"tools/call","params":{"name":"docket-doctor-probe","arguments":{"__pic":"not a proposal"}}}` + "\n")
	out, err := cmd.Output()
	for _, line := range strings.Split(string(out), "\n") {
		var m struct {
			ID     string `json:"id"`
			Result struct {
				IsError bool           `json:"isError"`
				Meta    map[string]any `json:"_meta"`
			} `json:"result"`
			Error *struct {
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.ID != "docket-doctor" {
			continue
		}
		if m.Result.IsError && m.Result.Meta[MetaDecision] == "deny" || m.Error != nil && m.Error.Data[MetaDecision] == "deny" {
			return nil
		}
		return fmt.Errorf("the probe call was answered without Docket's denial: %s", line)
	}
	if err != nil {
		return fmt.Errorf("docket mcp gave no denial and exited: %v", err)
	}
	return errors.New("docket mcp gave no answer to the probe call")
}
