package docketcmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const mcpUsage = `Usage:
    docket mcp [options] -- SERVER_CMD [ARGS...]

Runs the stdio MCP server SERVER_CMD behind Docket's gate: every message is
relayed byte for byte, and every tools/call is decided by the project's
policy (as mcp__NAME__TOOL, with the arguments in the context) and its
decision receipt fsynced before the server sees it. A denied call is
answered as a tool result with isError and never reaches the server.
resources/read, resources/subscribe, prompts/get and completion/complete
are decided the same way (as mcp__NAME__resources:read and so on, their
params as the input); their denial is a JSON-RPC error. PIC
action proposals under arguments.__pic are verified first and stripped.
Exits with the server's exit code.

Options:
    -name NAME            server name in tool names (default: SERVER_CMD's base name)
    -dir DIR              project whose .docket store decides (default: $CLAUDE_PROJECT_DIR or .)
    -session ID           receipt chain of this connection (default: a new mcp-NAME-... id)
    -agent NAME           principal Agent::"NAME" in the policy (default: mcp)
    -deny-as-error        answer denials with JSON-RPC error -32010 instead of an isError result
    -high-impact TOOLS    comma-separated tools ("*": all) that need a verified PIC proposal
                          with trusted evidence (the default policy's mcp-high-impact-needs-pic)
    -hide-denied          drop from tools/list the tools the policy denies even with a
                          verified PIC proposal (the list is receipted as sent)
    -evidence-root DIR    directory PIC file:// hash evidence is read from (nothing outside it)
    -keys FILE            PIC keyring for signature evidence
    -max-line BYTES       cap on one client message (default 1048576)
    -grace DURATION       wait before SIGTERM, then SIGKILL, once the client is gone (default 2s)
    -log FILE             append one JSON line per decided call to FILE
    -confine              run the server under the policy's confinement (docket exec);
                          the server does not start where it cannot be applied
    -sync-every DURATION  when the project has a log, submit the session's receipts
                          to it in the background while the session runs: at most
                          DURATION apart, and right after each receipt is signed
                          (default 1s; 0: only once the session ends, as the hooks do)

Examples:
    docket mcp -name fs -- npx -y @modelcontextprotocol/server-filesystem .
    docket init -mcp fs -- npx -y @modelcontextprotocol/server-filesystem .
`

func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket mcp", mcpUsage, stderr)
	name := fs.String("name", "", "")
	dir := fs.String("dir", "", "")
	session := fs.String("session", "", "")
	agent := fs.String("agent", "mcp", "")
	denyAsError := fs.Bool("deny-as-error", false, "")
	highImpact := fs.String("high-impact", "", "")
	hideDenied := fs.Bool("hide-denied", false, "")
	evidenceRoot := fs.String("evidence-root", "", "")
	keysFile := fs.String("keys", "", "")
	maxLine := fs.Int("max-line", mcp.DefaultMaxLine, "")
	grace := fs.Duration("grace", 2*time.Second, "")
	logFile := fs.String("log", "", "")
	syncEvery := fs.Duration("sync-every", time.Second, "")
	confineServer := fs.Bool("confine", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		errorf(stderr, "mcp: no server command")
		hintf(stderr, "docket mcp [options] -- SERVER_CMD [ARGS...]")
		return 2
	}
	if *name == "" {
		*name = serverName(argv)
	}
	project := *dir
	if project == "" {
		var err error
		if project, err = store.ProjectDir(); err != nil {
			errorf(stderr, "mcp: %v", err)
			return 2
		}
	}
	project, _ = filepath.Abs(project)
	// The gate's fail-closed rule (package gate), as for the hooks: no
	// key is no gate, and the relay does not start; a policy that does not
	// load denies every call (signed, with the reason), so the client sees
	// why; a configuration that cannot be read turns the strict mode on.
	g, err := gate.Open(ctx, project, gate.Options{Caller: "MCP relay"})
	if err != nil {
		errorf(stderr, "mcp: %v", err)
		hintf(stderr, "run docket init in %s first", project)
		return 2
	}
	st := g.Store()
	var confinement *receipts.Confinement
	if *confineServer {
		if argv, confinement, err = confineServerCommand(ctx, project, argv); err != nil {
			errorf(stderr, "mcp: %v; the server did not start", err)
			return 2
		}
	}
	cfg := mcp.Config{
		Confinement:  confinement,
		Gate:         g,
		Server:       *name,
		Command:      argv,
		SessionID:    *session,
		Agent:        *agent,
		DenyAsError:  *denyAsError,
		HideDenied:   *hideDenied,
		MaxLine:      *maxLine,
		EvidenceRoot: *evidenceRoot,
		Grace:        *grace,
	}
	if cfg.SessionID == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		cfg.SessionID = fmt.Sprintf("mcp-%s-%s-%s", *name, time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(b[:]))
	}
	if *highImpact != "" {
		for _, t := range strings.Split(*highImpact, ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.HighImpact = append(cfg.HighImpact, t)
			}
		}
	}
	if *keysFile != "" {
		if cfg.Keys, err = loadKeyring(*keysFile); err != nil {
			errorf(stderr, "mcp: -keys: %v", err)
			return 2
		}
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			errorf(stderr, "mcp: -log: %v", err)
			return 2
		}
		defer f.Close()
		cfg.Logger = slog.New(slog.NewJSONHandler(f, nil))
	}
	if err := g.PolicyError(ctx); err != nil && ctx.Err() == nil {
		warnf(stderr, "mcp: the policy does not load, every call will be denied: %v", err)
	}
	if err := g.ConfigError(); err != nil {
		warnf(stderr, "mcp: %v; every allowed call waits for the log, which cannot take it, and is denied", err)
	}
	hasLog := false
	if c, err := st.LoadConfig(); err == nil && c.HasLog() {
		hasLog = true
	}
	var follower *store.Follower
	if hasLog && *syncEvery > 0 {
		// Receipts reach the log while the session runs, not only once it
		// ends (or never, when the relay is killed): one goroutine, woken
		// after each receipt. Failures are reported once per change.
		logger := cfg.Logger
		if logger == nil {
			logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
		follower = st.Follow(ctx, *syncEvery, store.SyncOptions{CheckpointEvery: 5 * time.Minute}, logger)
		cfg.Appended = follower.Wake
	}
	code, err := mcp.Run(ctx, cfg, stdin, stdout, stderr)
	if err != nil {
		errorf(stderr, "mcp: %v", err)
	}
	if !hasLog {
		return code
	}
	if follower != nil {
		// The session_end and whatever the last round left, in a bounded
		// wait; what is still pending goes to a detached docket sync.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalSync)
		err := follower.Shutdown(sctx)
		cancel()
		if err == nil {
			return code
		}
	}
	// Like the hooks: submit the new receipts in a detached docket sync.
	startSync(st, stderr)
	return code
}

// finalSync bounds the last submission of docket mcp, once the session
// ended, before it hands what is left to a detached docket sync.
const finalSync = 5 * time.Second

// serverName derives a server name from its command: the base name of the
// program, or of the first argument that names a package for npx, uvx and
// the like, reduced to letters, digits, '-' and '_'.
func serverName(argv []string) string {
	prog := filepath.Base(argv[0])
	if prog == "npx" || prog == "uvx" || prog == "bunx" || prog == "pnpx" || prog == "node" || prog == "python3" || prog == "python" {
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				prog = a
				break
			}
		}
	}
	prog = strings.TrimPrefix(filepath.Base(prog), "server-")
	prog = strings.TrimSuffix(prog, filepath.Ext(prog))
	var b strings.Builder
	for _, r := range prog {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "server"
	}
	return s
}

// initMCP runs MCP server name through docket mcp: its entry in the MCP
// client config (configPath, "" for the project's .mcp.json, "desktop" for
// Claude Desktop's) is rewritten, and name is trusted in the default policy.
func initMCP(s *store.Store, name, configPath string, serverCmd []string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the docket binary: %w", err)
	}
	switch configPath {
	case "":
		configPath = filepath.Join(s.Project, ".mcp.json")
	case "desktop":
		if configPath, err = desktopConfig(); err != nil {
			return "", err
		}
	}
	changed, err := mcp.InstallClient(configPath, name, exe, []string{"-dir", s.Project}, serverCmd)
	if err != nil {
		return "", err
	}
	msg := "kept " + name + " in " + rel(s.Project, configPath) + " (already runs through docket mcp)"
	if changed {
		msg = "server " + name + " in " + rel(s.Project, configPath) + " now runs through docket mcp (a previous file is kept as .bak)"
	}
	path := filepath.Join(s.PolicyDir(), policy.DefaultName)
	src, err := os.ReadFile(path)
	if err != nil {
		return msg + "; trust it in your policy (mcp-ask-other-servers) or its calls are denied", nil
	}
	out, trusted, err := mcp.TrustServer(src, name)
	if err != nil {
		return msg + "; trust it in your policy (mcp-ask-other-servers) or its calls are denied", nil
	}
	if trusted {
		if err := durable.WriteFile(path, out, 0o644); err != nil {
			return "", err
		}
		msg += "; trusted Action::\"mcp__" + name + "\" in " + rel(s.Project, path)
	}
	return msg, nil
}

// desktopConfig is Claude Desktop's configuration file.
func desktopConfig() (string, error) {
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

// doctorMCP checks the MCP servers of the project's .mcp.json: a server not
// run through docket mcp is reported as ungated, and each gated one is
// started exactly as configured (in the session docket-doctor) and sent a
// tools/call with a malformed PIC proposal, which the gate must deny
// without the server seeing it. It returns false when a gated server does
// not block.
func doctorMCP(ctx context.Context, project string, stdout io.Writer) bool {
	path := filepath.Join(project, ".mcp.json")
	entries, err := mcp.ReadClient(path)
	if err != nil {
		if !os.IsNotExist(err) {
			fmt.Fprintf(stdout, "FAIL  MCP config: %v\n", err)
			return false
		}
		return true
	}
	ok := true
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e := entries[n]
		if !e.Gated() {
			fmt.Fprintf(stdout, "warn  MCP server %s in .mcp.json does not run through docket mcp: its calls are not gated (docket init -mcp %s)\n", n, n)
			continue
		}
		if err := probeMCP(ctx, e); err != nil {
			ok = false
			fmt.Fprintf(stdout, "FAIL  MCP server %s: %v\n", n, err)
			continue
		}
		fmt.Fprintf(stdout, "ok    MCP server %s: docket mcp denies a refused call before the server sees it\n", n)
	}
	return ok
}

// probeMCP runs a gated .mcp.json entry and checks that a tools/call whose
// PIC proposal is malformed is answered with Docket's denial.
func probeMCP(ctx context.Context, e mcp.ClientEntry) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append([]string{"mcp", "-session", doctorSession, "-grace", "1s"}, e.Args[1:]...)
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
		if m.Result.IsError && m.Result.Meta[mcp.MetaDecision] == "deny" || m.Error != nil && m.Error.Data[mcp.MetaDecision] == "deny" {
			return nil
		}
		return fmt.Errorf("the probe call was answered without Docket's denial: %s", line)
	}
	if err != nil {
		return fmt.Errorf("docket mcp gave no denial and exited: %v", err)
	}
	return errors.New("docket mcp gave no answer to the probe call")
}
