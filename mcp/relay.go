// Package mcp is Docket's MCP gate: a message-level relay between an MCP
// client and a stdio MCP server (MCP specification, basic/transports/stdio:
// newline-delimited JSON-RPC 2.0) that decides every tools/call with the
// project's gate before the server sees it.
//
// Every message is relayed byte for byte and in order in each direction,
// ids untouched; notifications and server-to-client requests pass through.
// A message is relayed only when every mainstream parser reads it as the
// relay does (reading.go): client messages are parsed strictly (duplicate
// keys, invalid UTF-8, lone surrogates) and refused when a member folds
// like another, like a protocol member or like a name of the tool's
// inputSchema for case-insensitive decoders, or a number is outside
// I-JSON's exact range. A response is relayed only for a request the
// relay forwarded and has not seen answered, and only when every parser
// reads it alike; else the client gets an error in its place.
//
// A tools/call's PIC action proposal (arguments.__pic) is verified
// (package pic), and the call is decided by the Cedar policy with the
// arguments, the server's identity and the proposal's outcome in the
// context. The signed decision is fsynced to the session chain before the
// call is forwarded; a denied call never reaches the server and is answered
// to the client as a tool result with isError set, the reason and policy
// ids in its text and the decision receipt's hash in _meta. The server's
// response, the client's cancellation or the server's exit produces an
// execution receipt linked to the decision. Any error denies.
//
// The other client requests whose params a server resolves to files
// (resources/read, resources/subscribe, prompts/get, completion/complete)
// are decided the same way, as calls of pseudo-tools (gatedMethods); their
// denial is a JSON-RPC error.
//
// The relay keeps no protocol state beyond the requests in flight and the
// tools' input schemas, so it works with every protocol version, including
// 2026-07-28, which has no initialize handshake (the server's identity
// then comes from io.modelcontextprotocol/serverInfo in result _meta).
//
// The MCP clients' configuration is this package's too (install.go,
// project.go): [Install] puts a server behind docket mcp and trusts it in
// the project's policy (`docket init -mcp`), and [ProbeServers] proves that
// each gated server of a project refuses a call before the server sees it
// (`docket doctor`).
package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/telemetry"
)

// DeniedCode is the JSON-RPC error code of a denial under Config.DenyAsError,
// in the implementation-defined server-error range (-32000 to -32019).
const DeniedCode = -32010

// Meta keys Docket adds to a denial's _meta.
const (
	MetaReceipt   = "io.docketlog/receipt"    // "sha256:…" hash of the decision receipt
	MetaDecision  = "io.docketlog/decision"   // "deny"
	MetaPolicyIDs = "io.docketlog/policy_ids" // the policies that decided
)

// DefaultMaxLine is the default cap on a client message, in bytes.
const DefaultMaxLine = strictjson.MaxDocumentSize

// Config configures a relay.
type Config struct {
	// Gate decides and records the calls. Required.
	Gate *gate.Gate
	// Confinement, when the server runs confined (docket mcp -confine), is
	// what every execution receipt says it ran under.
	Confinement *receipts.Confinement
	// Server names the server in tool names: a call to tool T is decided as
	// mcp__<Server>__<T>, as the hooks name MCP tools. Required.
	Server string
	// Command is the server's command line, recorded in the Cedar context.
	Command []string
	// SessionID is the receipt chain of this relay's calls. Required.
	SessionID string
	// Agent is the principal (Agent::"<Agent>") and the receipts' agent;
	// "" means "mcp".
	Agent string
	// DenyAsError answers a denial with a JSON-RPC error (DeniedCode)
	// instead of a tool result with isError.
	DenyAsError bool
	// MaxLine caps one client message; longer lines are answered with an
	// error and never reach the server. 0 means DefaultMaxLine.
	MaxLine int
	// HighImpact names tools (as the server names them, or "*" for all)
	// whose calls the policy sees with context.high_impact set.
	HighImpact []string
	// HideDenied removes from tools/list results the tools the policy
	// denies even with empty arguments and a verified proposal backed by
	// trusted evidence (the result is then re-encoded, no longer byte for
	// byte). The list is receipted as the server sent it.
	HideDenied bool
	// EvidenceRoot and Keys verify PIC evidence (see pic.Options).
	EvidenceRoot string
	Keys         *pic.Keyring
	PICLimits    pic.Limits
	// Grace is how long Run waits for the server to exit after closing its
	// stdin before SIGTERM, after SIGTERM before SIGKILL (both to its
	// process group), and after SIGKILL before it stops reading the
	// server's stdout. 0 means 2s.
	Grace time.Duration
	// Logger receives one line per decided call; nil discards.
	Logger *slog.Logger
	// Telemetry, when set, receives one span per tools/call: its decision,
	// and for a call that ran, its outcome (package telemetry).
	Telemetry *telemetry.Exporter
	// Appended, if set, is called after each receipt the relay appends to
	// the session's chain (the session_end excepted: Run returns right
	// after it), from the goroutine that appended it; it must not block.
	// docket mcp wakes its store.Follower with it, so that receipts reach
	// the log while the session runs.
	Appended func()
}

func (c *Config) check() error {
	if c.Gate == nil || c.Server == "" || c.SessionID == "" {
		return errors.New("mcp: Gate, Server and SessionID are required")
	}
	if !safeName(c.Server) {
		return fmt.Errorf("mcp: server name %q: use letters, digits, '-' and '_' only", c.Server)
	}
	return nil
}

// safeName reports whether s can name a server in mcp__<server>__<tool>.
func safeName(s string) bool {
	if s == "" || len(s) > 64 || strings.Contains(s, "__") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// relay is one client-server connection. Its two loops run on their own
// goroutines: clientLoop alone writes to the server, and every write to the
// client holds clientMu so that lines never interleave.
type relay struct {
	cfg    Config
	log    *slog.Logger
	agent  string
	high   map[string]bool
	cmd    string
	server io.Writer

	clientMu sync.Mutex // guards client
	client   io.Writer

	flights flights // the client's requests in flight
	tools   tools   // what the server's tool lists said

	// nonce makes the ids of the relay's own requests unguessable;
	// listSeq numbers them (client loop only).
	nonce   string
	listSeq int

	infoMu     sync.Mutex // guards serverInfo and protocol
	serverInfo string
	protocol   string // the protocol version the initialize result named

	endMu sync.RWMutex // guards ended; held shared while a receipt is appended
	ended bool
}

// Relay relays one connection until the client's stream ends (nil) or the
// server's does (io.ErrUnexpectedEOF when calls were in flight, else nil),
// or ctx ends. It does not close server; see Run for a relay that owns the
// server process.
func Relay(ctx context.Context, cfg Config, client io.Reader, clientOut io.Writer, server io.Writer, serverOut io.Reader) error {
	r, err := newRelay(cfg, clientOut, server)
	if err != nil {
		return err
	}
	fromServer := make(chan error, 1)
	go func() { fromServer <- r.serverLoop(serverOut) }()
	fromClient := make(chan error, 1)
	go func() { fromClient <- r.clientLoop(ctx, client) }()
	select {
	case err := <-fromClient:
		return err
	case err := <-fromServer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newRelay(cfg Config, clientOut, server io.Writer) (*relay, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	r := &relay{cfg: cfg, log: cfg.Logger, agent: cfg.Agent, client: clientOut, server: server,
		high: map[string]bool{}, cmd: strings.Join(cfg.Command, " "), nonce: hex.EncodeToString(nonce[:])}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.agent == "" {
		r.agent = "mcp"
	}
	for _, t := range cfg.HighImpact {
		r.high[t] = true
	}
	return r, nil
}

// errEnded refuses a receipt after the session's end.
var errEnded = errors.New("the session has ended")

// append runs fn, which appends a receipt to the session chain, unless
// the session has ended: nothing follows its session_end.
func (r *relay) append(fn func() error) error {
	r.endMu.RLock()
	defer r.endMu.RUnlock()
	if r.ended {
		return errEnded
	}
	if err := fn(); err != nil {
		return err
	}
	if r.cfg.Appended != nil {
		r.cfg.Appended()
	}
	return nil
}

// end ends the session: once it returns, no receipt is appended but the
// session_end its caller records.
func (r *relay) end() {
	r.endMu.Lock()
	r.ended = true
	r.endMu.Unlock()
}

func (r *relay) info() string {
	r.infoMu.Lock()
	defer r.infoMu.Unlock()
	return r.serverInfo
}

// noteServerInfo remembers the server's name and version from an
// initialize result (serverInfo) or a 2026-07-28 result's _meta.
func (r *relay) noteServerInfo(result map[string]any) {
	if v, ok := result["protocolVersion"].(string); ok {
		r.infoMu.Lock()
		r.protocol = v
		r.infoMu.Unlock()
	}
	i, ok := result["serverInfo"].(map[string]any)
	if !ok {
		meta, _ := result["_meta"].(map[string]any)
		if i, ok = meta["io.modelcontextprotocol/serverInfo"].(map[string]any); !ok {
			return
		}
	}
	name, _ := i["name"].(string)
	version, _ := i["version"].(string)
	r.infoMu.Lock()
	r.serverInfo = strings.TrimSpace(name + " " + version)
	r.infoMu.Unlock()
}

func sha256Ref(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
