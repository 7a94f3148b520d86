package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const initUsage = `Usage:
    docket init [options]

Sets up Docket in the project ($CLAUDE_PROJECT_DIR, else the current
directory), keeping whatever is already there:

    .docket/issuer.key         a new Ed25519 issuer key (mode 0600)
    .docket/policy/docket.cedar  the default policy, if there is no policy yet
    .docket/config.json        the log to submit receipts to (with -log)
    .claude/settings.json      Claude Code: PreToolUse, PostToolUse,
                               PostToolUseFailure, SessionStart, SessionEnd
    .gemini/settings.json      Gemini CLI: BeforeTool, AfterTool,
                               SessionStart, SessionEnd (timeouts in ms)
    .codex/hooks.json          Codex: PreToolUse, PostToolUse, SessionStart,
                               SessionEnd
    .gitignore                 the key, sessions, proofs and spool

Hooks are merged into the existing settings, never replacing them. Running
it again changes nothing that is already set up. It then says what you must
still do for the agent to run project hooks at all (trust the folder, trust
the hooks): until then Gemini CLI and Codex silently run none.

Options:
    -agent NAMES           claude, gemini, codex or all, comma-separated
                           (default: the agents whose project directory or
                           binary is present, else claude)
    -log URL               submit receipts to this docket-log
    -log-key VKEY          the log's checkpoint key (note vkey); needed with -log
    -witness-policy FILE   C2SP tlog-policy file of the witnesses proofs must satisfy
    -require-log           strict mode: the pre hook allows a call only once its
                           allow decision is in the log with the witness quorum,
                           and denies it (log_unavailable) when that fails; the
                           one case where the hook waits on the network
    -confine               run every shell call under the policy's confinement
                           (docket exec; denied where this machine cannot confine),
                           and turn Codex's and Gemini CLI's own sandbox on
    -command CMD           the docket command hooks run (default: this binary)
    -mcp NAME              run MCP server NAME through docket mcp: rewrite its entry in
                           the MCP client config (the command after --, or the one
                           configured) and trust NAME in the default policy
    -mcp-config FILE       the MCP client config to rewrite (default: .mcp.json, Claude
                           Code's; "desktop" for Claude Desktop's)

Examples:
    docket init
    docket init -agent gemini
    docket init -agent all
    docket init -log https://log.example.com -log-key 'log.example.com+1234abcd+AQ…'
    docket init -mcp fs -- npx -y @modelcontextprotocol/server-filesystem .
`

// gitignoreLines are the .docket paths that stay out of version control.
var gitignoreLines = []string{
	"/.docket/issuer.key", "/.docket/sessions/", "/.docket/proofs/", "/.docket/spool/",
}

func runInit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket init", initUsage, stderr)
	logURL := fs.String("log", "", "")
	logKey := fs.String("log-key", "", "")
	witness := fs.String("witness-policy", "", "")
	command := fs.String("command", "", "")
	requireLog := fs.Bool("require-log", false, "")
	confineFlag := fs.Bool("confine", false, "")
	agentNames := fs.String("agent", "", "")
	mcpName := fs.String("mcp", "", "")
	mcpConfig := fs.String("mcp-config", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 && *mcpName == "" {
		errorf(stderr, "init: unexpected arguments %q", fs.Args())
		return 2
	}
	project, err := store.ProjectDir()
	if err != nil {
		errorf(stderr, "%v", err)
		return 2
	}
	agents, err := initAgents(project, *agentNames)
	if err != nil {
		errorf(stderr, "init: %v", err)
		return 2
	}
	s := store.Open(project)
	if *command == "" {
		exe, err := os.Executable()
		if err != nil {
			errorf(stderr, "init: finding the docket binary: %v", err)
			hintf(stderr, "pass -command with the absolute path of docket")
			return 2
		}
		*command = hook.ShellQuote(exe)
	}

	steps := []func() (string, error){
		func() (string, error) { return initKey(s) },
		func() (string, error) { return initPolicy(s) },
		func() (string, error) { return initConfig(s, *logURL, *logKey, *witness, *requireLog) },
	}
	for _, a := range agents {
		steps = append(steps, func() (string, error) { return initSettings(project, a, *command) })
	}
	steps = append(steps, func() (string, error) { return initGitignore(project) })
	if *confineFlag {
		steps = append(steps, func() (string, error) {
			msgs, err := hook.InitConfine(ctx, s, agents)
			return strings.Join(msgs, "\n"), err
		})
	}
	if *mcpName != "" {
		steps = append(steps, func() (string, error) { return initMCP(s, *mcpName, *mcpConfig, fs.Args()) })
	}
	for _, step := range steps {
		msg, err := step()
		if err != nil {
			errorf(stderr, "init: %v", err)
			return 2
		}
		if msg != "" {
			fmt.Fprintln(stdout, msg)
		}
	}
	for _, a := range agents {
		if todo := hook.TrustAdvice(a, project); todo != "" {
			fmt.Fprintf(stdout, "to do: %s\n", todo)
		}
	}
	fmt.Fprintf(stdout, "docket is set up in %s; run docket doctor to check that the gate blocks\n", project)
	return 0
}

// initAgents parses -agent, or picks the agents in use: those whose
// project directory (.claude, .gemini, .codex) or binary is present, and
// Claude Code when there is none.
func initAgents(project, names string) ([]hook.Agent, error) {
	all := []hook.Agent{hook.Claude, hook.Gemini, hook.Codex}
	var agents []hook.Agent
	if names == "" {
		for _, a := range all {
			if fi, err := os.Stat(filepath.Join(project, "."+string(a))); err == nil && fi.IsDir() {
				agents = append(agents, a)
			} else if _, err := exec.LookPath(string(a)); err == nil {
				agents = append(agents, a)
			}
		}
		if len(agents) == 0 {
			agents = []hook.Agent{hook.Claude}
		}
		return agents, nil
	}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n == "all" {
			return all, nil
		}
		a, err := hook.ParseAgent(n)
		if err != nil || n == "" {
			return nil, fmt.Errorf("-agent: unknown agent %q (want claude, gemini, codex or all)", n)
		}
		if !slices.Contains(agents, a) {
			agents = append(agents, a)
		}
	}
	return agents, nil
}

func initKey(s *store.Store) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", err
	}
	if _, err := os.Stat(s.KeyPath()); err == nil {
		priv, err := receipts.LoadPrivateKey(s.KeyPath())
		if err != nil {
			return "", fmt.Errorf("existing issuer key: %w", err)
		}
		return "kept issuer key " + receipts.NewKeyFile(priv).KID, nil
	}
	_, kf := receipts.GenerateKey()
	if err := receipts.WriteKeyFile(s.KeyPath(), kf); err != nil {
		return "", fmt.Errorf("writing issuer key: %w", err)
	}
	return "wrote issuer key " + kf.KID + " to " + rel(s.Project, s.KeyPath()), nil
}

func initPolicy(s *store.Store) (string, error) {
	if err := os.MkdirAll(s.PolicyDir(), 0o755); err != nil {
		return "", err
	}
	matches, _ := filepath.Glob(filepath.Join(s.PolicyDir(), "*.cedar"))
	if len(matches) > 0 {
		eng, err := policy.LoadDir(s.PolicyDir())
		if err != nil {
			return "", fmt.Errorf("existing policy does not load (every call would be denied): %w", err)
		}
		return "kept policy " + eng.Digest(), nil
	}
	path := filepath.Join(s.PolicyDir(), policy.DefaultName)
	if err := os.WriteFile(path, policy.Default, 0o644); err != nil {
		return "", fmt.Errorf("writing policy: %w", err)
	}
	return "wrote default policy to " + rel(s.Project, path), nil
}

func initConfig(s *store.Store, logURL, logKey, witness string, requireLog bool) (string, error) {
	if requireLog && logURL == "" {
		return "", errors.New("-require-log needs -log and -log-key")
	}
	if logURL == "" && logKey == "" && witness == "" {
		return "", nil
	}
	if witness != "" {
		abs, err := filepath.Abs(witness)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("witness policy: %w", err)
		}
		if r, err := filepath.Rel(s.Project, abs); err == nil && !strings.HasPrefix(r, "..") {
			abs = r // keep the configuration movable with the project
		}
		witness = abs
	}
	c := store.Config{LogURL: logURL, LogKey: logKey, WitnessPolicy: witness, RequireLog: requireLog}
	if err := s.WriteConfig(c); err != nil {
		return "", err
	}
	if requireLog {
		return "wrote " + rel(s.Project, s.ConfigPath()) + " (log " + logURL + "; strict: a call runs only once its allow is in the log)", nil
	}
	return "wrote " + rel(s.Project, s.ConfigPath()) + " (log " + logURL + ")", nil
}

// initSettings merges docket's hooks into the agent's project hook
// configuration. Existing settings and hooks are kept; an event that
// already runs `docket hook <kind>` is left alone.
func initSettings(project string, agent hook.Agent, command string) (string, error) {
	name, _, err := agent.Installs()
	if err != nil {
		return "", err
	}
	path := filepath.Join(project, name)
	settings, err := hook.ReadSettings(path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	added, err := settings.Install(agent, command)
	if err != nil {
		return "", err
	}
	if len(added) == 0 {
		return "kept hooks in " + rel(project, path), nil
	}
	if err := settings.Write(); err != nil {
		return "", err
	}
	return fmt.Sprintf("added %s hooks to %s", strings.Join(added, ", "), rel(project, path)), nil
}

func initGitignore(project string) (string, error) {
	path := filepath.Join(project, ".gitignore")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, l := range gitignoreLines {
		if !have[l] && !have[strings.TrimPrefix(l, "/")] {
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# docket: the issuer key and local receipt state\n")
	for _, l := range add {
		b.WriteString(l + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return "added " + strings.Join(add, " ") + " to .gitignore", nil
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}
