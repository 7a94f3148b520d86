package docketcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/hook"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
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
                               PostToolUseFailure, SessionStart, SessionEnd,
                               Stop, SubagentStop
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
    -observe               observe mode, for rolling a policy out: every call is
                           decided and signed, but the policy's deny or ask is
                           answered as allow and receipted "enforced": false
                           (gate errors still block); -observe=false ends it
    -journal               keep the local journal: the exact input of each call,
                           by its receipt's hash, in .docket/journal (0600), never
                           submitted; docket policy suggest reads it (-journal=false
                           stops it)
    -confine               run every shell call under the policy's confinement
                           (docket exec; denied where this machine cannot confine),
                           and turn Codex's and Gemini CLI's own sandbox on
    -commit-inputs         receipts commit to each call's input with a salted
                           tool_input_commitment instead of the unsalted
                           tool_input_hash, so that a reader of the public log
                           cannot confirm a guess of a short input; the salts
                           stay in the journal (turned on with it), and docket
                           disclose reveals one call's (docs/audit.md)
    -command CMD           the docket command hooks run (default: "docket" when the
                           docket on PATH is this binary, else its absolute path)
    -mcp NAME              run MCP server NAME through docket mcp: rewrite its entry in
                           the MCP client config (the command after --, or the one
                           configured) and trust NAME in the default policy
    -mcp-config FILE       the MCP client config to rewrite (default: .mcp.json, Claude
                           Code's; "desktop" for Claude Desktop's)

Examples:
    docket init
    docket init -agent gemini
    docket init -agent all
    docket init -observe -journal
    docket init -log https://log.example.com -log-key 'log.example.com+1234abcd+AQ…'
    docket init -mcp fs -- npx -y @modelcontextprotocol/server-filesystem .
`

func runInit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket init", initUsage, stderr)
	logURL := fs.String("log", "", "")
	logKey := fs.String("log-key", "", "")
	witness := fs.String("witness-policy", "", "")
	command := fs.String("command", "", "")
	requireLog := fs.Bool("require-log", false, "")
	observe := fs.Bool("observe", false, "")
	journal := fs.Bool("journal", false, "")
	confineFlag := fs.Bool("confine", false, "")
	fs.Bool("commit-inputs", false, "") // read by initModes
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
	// In a project (or below one), init works on it, never nesting a
	// second; elsewhere it sets one up in the current directory.
	project, err := store.FindProject()
	if errors.Is(err, store.ErrNoProject) {
		project, err = store.ProjectDir()
	}
	if err != nil {
		errorf(stderr, "init: %v", err)
		return 2
	}
	agents := hook.DetectAgents(project)
	if *agentNames != "" {
		if agents, err = hook.ParseAgents(*agentNames); err != nil {
			errorf(stderr, "init: -agent: %v", err)
			return 2
		}
	}
	if err := initCheck(project, agents, *logURL, *logKey, *witness, *requireLog); err != nil {
		errorf(stderr, "init: %v", err)
		hintf(stderr, "nothing was written")
		return 2
	}
	s := store.Open(project)
	// A new .docket is set up in a directory beside it and renamed into
	// place once key, policy and configuration are written: a failure
	// leaves no half-initialised project.
	var stage string
	if _, err := os.Lstat(filepath.Join(project, store.DirName)); errors.Is(err, iofs.ErrNotExist) {
		if stage, err = os.MkdirTemp(project, store.DirName+".init-"); err != nil {
			errorf(stderr, "init: %v", err)
			return 2
		}
		defer os.RemoveAll(stage) // gone once renamed
		s = store.OpenDir(stage)
	}
	if *command == "" {
		exe, err := os.Executable()
		if err != nil {
			errorf(stderr, "init: finding the docket binary: %v", err)
			hintf(stderr, "pass -command with the absolute path of docket")
			return 2
		}
		*command = hook.DefaultCommand(exe)
	}

	steps := []func() (string, error){
		func() (string, error) { return initKey(s) },
		func() (string, error) { return initPolicy(s) },
		func() (string, error) { return initConfig(s, *logURL, *logKey, *witness, *requireLog) },
		func() (string, error) { return initModes(s, fs, *observe, *journal) },
	}
	if stage != "" {
		steps = append(steps, func() (string, error) {
			if err := os.Rename(stage, filepath.Join(project, store.DirName)); err != nil {
				return "", err
			}
			s = store.Open(project)
			return "", nil
		})
	}
	for _, a := range agents {
		steps = append(steps, func() (string, error) { return initSettings(project, a, *command) })
	}
	steps = append(steps, func() (string, error) { return initGitignore(store.Open(project)) })
	if *confineFlag {
		steps = append(steps, func() (string, error) {
			msgs, err := hook.InitConfine(ctx, store.Open(project), agents)
			return strings.Join(msgs, "\n"), err
		})
	}
	if *mcpName != "" {
		steps = append(steps, func() (string, error) { return initMCP(store.Open(project), *mcpName, *mcpConfig, fs.Args()) })
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

// initCheck checks everything docket init is given, and what it would
// build on, before anything is written: the log's URL and key, the witness
// policy (parsed, listing the log key), the strict mode's needs, the agents'
// existing hook files, and an existing key and policy.
func initCheck(project string, agents []hook.Agent, logURL, logKey, witness string, requireLog bool) error {
	c := store.Config{LogURL: logURL, LogKey: logKey, WitnessPolicy: witness, RequireLog: requireLog}
	if requireLog && logURL == "" {
		return errors.New("-require-log needs -log and -log-key")
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%w (flags -log, -log-key, -witness-policy)", err)
	}
	if witness != "" {
		if _, err := c2sp.LoadProofVerifier(logKey, witness); err != nil {
			return fmt.Errorf("-witness-policy: %w", err)
		}
	}
	for _, a := range agents {
		name, _, err := a.Installs()
		if err != nil {
			return err
		}
		if _, err := hook.ReadSettings(filepath.Join(project, name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	s := store.Open(project)
	if s.HasKey() {
		if _, err := s.Key(); err != nil {
			return fmt.Errorf("existing issuer key: %w", err)
		}
	}
	if s.HasPolicy() {
		if _, err := gate.LoadPolicy(s); err != nil {
			return fmt.Errorf("existing policy does not load (every call would be denied): %w", err)
		}
	}
	if _, err := s.Config(); err != nil {
		return fmt.Errorf("existing configuration: %w", err)
	}
	return nil
}

// The steps of docket init, each saying what it did.

func initKey(s *store.Store) (string, error) {
	kid, created, err := s.InitKey()
	if err != nil || !created {
		return "kept issuer key " + kid, err
	}
	return "wrote issuer key " + kid + " to " + filepath.Join(store.DirName, store.KeyFile), nil
}

func initPolicy(s *store.Store) (string, error) {
	if s.HasPolicy() {
		eng, err := gate.LoadPolicy(s)
		if err != nil {
			return "", fmt.Errorf("existing policy does not load (every call would be denied): %w", err)
		}
		return "kept policy " + eng.Digest(), nil
	}
	if _, err := s.WritePolicyFile(policy.DefaultName, policy.Default); err != nil {
		return "", err
	}
	// Named where it ends up: a new .docket is written beside the project
	// first and renamed into place.
	return "wrote default policy to " + filepath.Join(store.DirName, store.PolicyDir, policy.DefaultName), nil
}

func initConfig(s *store.Store, logURL, logKey, witness string, requireLog bool) (string, error) {
	if requireLog && logURL == "" {
		return "", errors.New("-require-log needs -log and -log-key")
	}
	if logURL == "" && logKey == "" && witness == "" {
		return "", nil
	}
	c, _ := s.Config() // the modes set by -observe and -journal stay
	c.LogURL, c.LogKey, c.WitnessPolicy, c.RequireLog = logURL, logKey, witness, requireLog
	if err := s.InitConfig(c); err != nil {
		return "", err
	}
	name := filepath.Join(store.DirName, store.ConfigFile)
	if requireLog {
		return "wrote " + name + " (log " + logURL + "; strict: a call runs only once its allow is in the log)", nil
	}
	return "wrote " + name + " (log " + logURL + ")", nil
}

// initSettings installs docket's hooks in the agent's hook file.
func initSettings(project string, agent hook.Agent, command string) (string, error) {
	path, added, err := hook.InstallProject(project, agent, command)
	if err != nil || len(added) == 0 {
		return "kept hooks in " + rel(project, path), err
	}
	return fmt.Sprintf("added %s hooks to %s", strings.Join(added, ", "), rel(project, path)), nil
}

func initGitignore(s *store.Store) (string, error) {
	add, err := s.InitGitignore()
	if err != nil || len(add) == 0 {
		return "", err
	}
	return "added " + strings.Join(add, " ") + " to .gitignore", nil
}

// initMCP runs MCP server name through docket mcp (mcp.Install).
func initMCP(s *store.Store, name, configPath string, serverCmd []string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the docket binary: %w", err)
	}
	in, err := mcp.Install(s, name, configPath, exe, serverCmd)
	if err != nil {
		return "", err
	}
	msg := "kept " + name + " in " + rel(s.Project(), in.Config) + " (already runs through docket mcp)"
	if in.Changed {
		msg = "server " + name + " in " + rel(s.Project(), in.Config) + " now runs through docket mcp"
		if in.Backup != "" {
			msg += " (the previous file is kept as " + rel(s.Project(), in.Backup) + ")"
		}
	}
	if in.Trusted != "" {
		msg += "; trusted Action::\"mcp__" + name + "\" in " + rel(s.Project(), in.Trusted)
	} else if in.Untrusted {
		msg += "; trust it in your policy (mcp-ask-other-servers) or its calls are denied"
	}
	return msg, nil
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}
