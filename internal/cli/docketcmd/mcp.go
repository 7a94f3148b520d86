package docketcmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/mcp"
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

Environment:
    OTEL_EXPORTER_OTLP_ENDPOINT  export one OpenTelemetry span per tools/call (OTLP/HTTP;
                                 the other OTEL_* variables apply; docs/mcp.md)

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
	if c, err := st.Config(); err == nil && c.HasLog() {
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
	tel := openTelemetry(stderr)
	cfg.Telemetry = tel
	code, err := mcp.Run(ctx, cfg, stdin, stdout, stderr)
	closeTelemetry(ctx, tel)
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
