// Package mcp is Docket's MCP gate: a message-level relay between an MCP
// client and a stdio MCP server (MCP specification, basic/transports/stdio:
// newline-delimited JSON-RPC 2.0) that decides every tools/call with the
// project's gate before the server sees it.
//
// Every message is relayed byte for byte and in order in each direction,
// ids untouched; notifications and server-to-client requests pass through.
// A tools/call is parsed strictly (duplicate keys, invalid UTF-8 and lone
// surrogates are refused), its PIC action proposal (arguments.__pic) is
// verified (package pic), and it is decided by the Cedar policy with the
// arguments, the server's identity and the proposal's outcome in the
// context. The signed decision is fsynced to the session chain before the
// call is forwarded; a denied call never reaches the server and is answered
// to the client as a tool result with isError set, the reason and policy
// ids in its text and the decision receipt's hash in _meta. The server's
// response, the client's cancellation or the server's exit produces an
// execution receipt linked to the decision. Any error denies.
//
// The relay keeps no protocol state beyond the calls in flight, so it works
// with every protocol version, including 2026-07-28, which has no
// initialize handshake (the server's identity then comes from
// io.modelcontextprotocol/serverInfo in result _meta).
package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/pic"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
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
const DefaultMaxLine = receipts.MaxDocumentSize

// Config configures a relay.
type Config struct {
	// Gate decides and records the calls. Required.
	Gate *gate.Gate
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
	// stdin before SIGTERM, and after SIGTERM before SIGKILL. 0 means 2s.
	Grace time.Duration
	// Logger receives one line per decided call; nil discards.
	Logger *slog.Logger
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

	flightMu   sync.Mutex // guards inflight and serverInfo
	inflight   map[string]*flight
	serverInfo string

	// toolsSeen holds the hashes of the tools/list results already
	// receipted; only the server loop uses it.
	toolsSeen map[string]bool
}

// flight is a request in flight whose response the relay acts on.
type flight struct {
	method    string // tools/call, tools/list, initialize
	tool      string // mcp__server__tool
	toolUseID string
	inputHash string
	decision  *store.Pending // the allow it executes, set before it is forwarded
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
	r := &relay{cfg: cfg, log: cfg.Logger, agent: cfg.Agent, client: clientOut, server: server,
		inflight: map[string]*flight{}, high: map[string]bool{}, cmd: strings.Join(cfg.Command, " "), toolsSeen: map[string]bool{}}
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

// clientLoop relays the client's messages to the server until the
// client's stream ends.
func (r *relay) clientLoop(ctx context.Context, in io.Reader) error {
	lr := newLineReader(in, r.cfg.MaxLine)
	for {
		line, long, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading from the client: %w", err)
		}
		if long {
			if err := lr.rest(nil); err != nil && err != io.EOF {
				return fmt.Errorf("reading from the client: %w", err)
			}
			r.log.Warn("mcp: client message over the line cap refused", "limit", r.cfg.MaxLine)
			r.replyError(nil, -32600, fmt.Sprintf("docket mcp: message longer than %d bytes; it was not relayed", r.cfg.MaxLine))
			continue
		}
		if err := r.fromClient(ctx, line); err != nil {
			return err
		}
	}
}

// fromClient handles one client line: relayed as is, answered (denied or
// refused), or, for an allowed tools/call that carried a PIC proposal,
// relayed without the proposal.
func (r *relay) fromClient(ctx context.Context, line []byte) error {
	body := bytes.TrimSpace(line)
	if len(body) == 0 {
		return nil
	}
	v, perr := receipts.Parse(body)
	if perr != nil {
		// Not strictly valid: never relayed. Recover the id and method
		// leniently to answer, and to sign a deny for a tools/call.
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &env)
		id := validID(env.ID)
		if env.Method == "tools/call" {
			return r.deny(ctx, id, callInfo{}, &policy.Decision{Reason: policy.ReasonInvalidInput,
				Message: "the tools/call message is not strictly valid JSON: " + perr.Error()}, "")
		}
		r.replyError(id, -32700, "docket mcp: the message is not strictly valid JSON ("+perr.Error()+"); it was not relayed")
		return nil
	}
	switch m := v.(type) {
	case map[string]any:
		method, _ := m["method"].(string)
		switch method {
		case "tools/call":
			return r.toolsCall(ctx, m, line)
		case "notifications/cancelled":
			if p, ok := m["params"].(map[string]any); ok {
				r.cancelled(p["requestId"], p["reason"])
			}
		case "tools/list", "initialize":
			if id, ok := m["id"]; ok {
				r.track(id, &flight{method: method})
			}
		}
	case []any:
		// JSON-RPC batches (protocol 2025-03-26): relayed unless they hold
		// a tools/call, which must be decided on its own.
		for _, e := range m {
			if o, ok := e.(map[string]any); ok && o["method"] == "tools/call" {
				r.replyError(nil, DeniedCode, "docket mcp: a batch holding tools/call is not relayed; send each tools/call on its own")
				return nil
			}
		}
	}
	return r.toServer(line)
}

func (r *relay) toServer(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	if _, err := r.server.Write(line); err != nil {
		return fmt.Errorf("writing to the server: %w", err)
	}
	return nil
}

// callInfo is what a decided tools/call is recorded as.
type callInfo struct {
	tool, toolUseID, inputHash string
	// stateless is set for a request of protocol 2026-07-28 or later
	// (it names its version in _meta), whose results carry resultType.
	stateless bool
}

// toolsCall decides a tools/call and relays it when allowed.
func (r *relay) toolsCall(ctx context.Context, m map[string]any, line []byte) error {
	start := time.Now()
	idv, hasID := m["id"]
	id := idBytes(idv, hasID)
	refuse := func(ci callInfo, msg string) error {
		return r.deny(ctx, id, ci, &policy.Decision{Reason: policy.ReasonInvalidInput, Message: msg}, "")
	}
	if id == nil {
		return refuse(callInfo{}, "tools/call without an id (a notification) is not relayed")
	}
	params, ok := m["params"].(map[string]any)
	if !ok {
		return refuse(callInfo{}, "tools/call params is not an object")
	}
	name, ok := params["name"].(string)
	if !ok || name == "" {
		return refuse(callInfo{}, "tools/call params.name is not a non-empty string")
	}
	ci := callInfo{tool: "mcp__" + r.cfg.Server + "__" + name, toolUseID: "jsonrpc:" + string(id)}
	if meta, ok := params["_meta"].(map[string]any); ok {
		_, ci.stateless = meta["io.modelcontextprotocol/protocolVersion"]
	}
	args := map[string]any{}
	if a, ok := params["arguments"]; ok && a != nil {
		if args, ok = a.(map[string]any); !ok {
			return refuse(ci, "tools/call params.arguments is not an object")
		}
	}
	proposal, hasPIC := args["__pic"]
	_, hasReqID := args["__pic_request_id"]
	if hasPIC || hasReqID {
		stripped := make(map[string]any, len(args))
		for k, v := range args {
			if k != "__pic" && k != "__pic_request_id" {
				stripped[k] = v
			}
		}
		args = stripped
	}
	input, err := receipts.Canonicalize(args)
	if err != nil {
		return refuse(ci, "tools/call arguments: "+err.Error())
	}
	ci.inputHash = sha256Ref(input) // receipts.HashJSON(args), without canonicalizing twice

	mc := &policy.MCPContext{ServerCommand: r.cmd, ServerInfo: r.info(), HighImpact: r.high[name] || r.high["*"]}
	var refusal *policy.Decision
	var digest string
	if hasPIC {
		mc.PIC.Present = true
		res, err := pic.VerifyValue(ctx, proposal, pic.Options{Tool: name, Args: args,
			EvidenceRoot: r.cfg.EvidenceRoot, Keys: r.cfg.Keys, Limits: r.cfg.PICLimits})
		if err != nil {
			refusal = &policy.Decision{Reason: policy.ReasonInvalidInput, Message: "PIC proposal refused: " + err.Error()}
		} else {
			mc.PIC.Verified, mc.PIC.Impact, mc.PIC.Trusted, digest = true, res.Impact, res.Trusted, res.Digest
		}
	}
	call := gate.Call{SessionID: r.cfg.SessionID, Agent: r.agent, ToolName: ci.tool, ToolUseID: ci.toolUseID,
		ToolInputHash: ci.inputHash, Start: start, Refusal: refusal, ProposalDigest: digest,
		Requests: []policy.Call{{Agent: r.agent, ToolName: ci.tool, ToolInput: input,
			Cwd: r.cfg.Gate.Store.Project, MCP: mc}}}
	if refusal != nil {
		return r.deny(ctx, id, ci, refusal, digest)
	}
	// The flight is registered before the decision is even made, so that
	// a fast response can never arrive unmatched; it is dropped on deny.
	key := string(id)
	r.flightMu.Lock()
	if _, dup := r.inflight[key]; dup {
		r.flightMu.Unlock()
		return refuse(ci, "a request with this id is already in flight")
	}
	r.inflight[key] = &flight{method: "tools/call", tool: ci.tool, toolUseID: ci.toolUseID, inputHash: ci.inputHash}
	r.flightMu.Unlock()

	d, err := r.cfg.Gate.Decide(ctx, call)
	if err != nil || d.Decision.Decision != policy.Allow {
		r.untrack(key)
		if err != nil {
			r.log.Error("mcp: deciding a call failed; denied", "tool", ci.tool, "err", err)
			r.answerDeny(id, ci, policy.Decision{Decision: policy.Deny, Reason: policy.ReasonGateError,
				Message: "the decision could not be recorded: " + err.Error()}, "")
			return nil
		}
		r.log.Info("mcp: call denied", "tool", ci.tool, "decision", d.Decision.Decision, "policy_ids", d.PolicyIDs)
		hash, _ := receipts.Hash(d.Receipt)
		r.answerDeny(id, ci, d.Decision, hash)
		return nil
	}
	r.log.Debug("mcp: call allowed", "tool", ci.tool, "policy_ids", d.PolicyIDs)
	// The execution receipt links this decision directly, without reading
	// the chain back for it, however many calls are in flight.
	r.flightMu.Lock()
	if f := r.inflight[key]; f != nil {
		f.decision = d.Pending(ci.tool)
	}
	r.flightMu.Unlock()
	if !hasPIC && !hasReqID {
		return r.toServer(line)
	}
	// Relay the call without its proposal: the arguments forwarded are the
	// arguments decided on.
	params["arguments"] = args
	out, err := receipts.Canonicalize(m)
	if err != nil {
		return fmt.Errorf("re-encoding a call: %w", err)
	}
	return r.toServer(out)
}

// deny signs a refusal (a deny the policy was not asked about) and
// answers it.
func (r *relay) deny(ctx context.Context, id []byte, ci callInfo, d *policy.Decision, digest string) error {
	if ci.tool == "" {
		ci.tool = "mcp__" + r.cfg.Server + "__"
	}
	dec, err := r.cfg.Gate.Decide(ctx, gate.Call{SessionID: r.cfg.SessionID, Agent: r.agent, ToolName: ci.tool,
		ToolUseID: ci.toolUseID, ToolInputHash: ci.inputHash, Refusal: d, ProposalDigest: digest})
	hash := ""
	if err != nil {
		r.log.Error("mcp: recording a refusal failed", "err", err)
	} else {
		hash, _ = receipts.Hash(dec.Receipt)
	}
	d.Decision = policy.Deny
	r.log.Info("mcp: call refused", "tool", ci.tool, "reason", d.Reason)
	if id != nil {
		r.answerDeny(id, ci, *d, hash)
	}
	return nil
}

// answerDeny answers a denied call: a tool result with isError (the model
// reads why and does not loop), or under DenyAsError a JSON-RPC error in
// the implementation-defined range. Never a "malformed request" code.
func (r *relay) answerDeny(id []byte, ci callInfo, d policy.Decision, receiptHash string) {
	verdict := "denied"
	if d.Decision == policy.RequireApproval {
		verdict = "needs approval, which docket mcp cannot ask for, so it was denied"
	}
	text := "Docket " + verdict + " this tool call; it was not run."
	if d.Message != "" {
		text += " Reason: " + d.Message + "."
	} else if d.Reason != "" {
		text += " Reason: " + d.Reason + "."
	}
	if len(d.PolicyIDs) > 0 {
		text += " Policy: " + strings.Join(d.PolicyIDs, ", ") + "."
	}
	if receiptHash != "" {
		text += " Receipt: " + receiptHash + "."
	}
	text += " The same call will be denied again; ask the user to change the policy or the call."
	ids := d.PolicyIDs
	if ids == nil {
		ids = []string{}
	}
	meta := map[string]any{MetaDecision: "deny", MetaPolicyIDs: ids}
	if receiptHash != "" {
		meta[MetaReceipt] = receiptHash
	}
	var msg any
	if r.cfg.DenyAsError {
		msg = map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": map[string]any{
			"code": DeniedCode, "message": text, "data": meta}}
	} else {
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": true, "_meta": meta}
		if ci.stateless {
			result["resultType"] = "complete"
		}
		msg = map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "result": result}
	}
	r.writeClient(msg)
}

// replyError answers a message that is not relayed with a JSON-RPC error
// (id may be nil: JSON null).
func (r *relay) replyError(id []byte, code int, message string) {
	idv := json.RawMessage("null")
	if id != nil {
		idv = id
	}
	r.writeClient(map[string]any{"jsonrpc": "2.0", "id": idv, "error": map[string]any{"code": code, "message": message}})
}

func (r *relay) writeClient(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		r.log.Error("mcp: encoding an answer", "err", err)
		return
	}
	r.clientMu.Lock()
	defer r.clientMu.Unlock()
	if _, err := r.client.Write(append(b, '\n')); err != nil {
		r.log.Error("mcp: writing to the client", "err", err)
	}
}

// idBytes returns the JCS form of a request id (a string or a number), or
// nil when there is none.
func idBytes(v any, ok bool) []byte {
	if !ok {
		return nil
	}
	switch v.(type) {
	case string, json.Number:
		b, err := receipts.Canonicalize(v)
		if err == nil {
			return b
		}
	}
	return nil
}

// validID returns a leniently parsed id in JCS form, or nil.
func validID(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	v, err := receipts.Parse(raw)
	if err != nil {
		return nil
	}
	return idBytes(v, true)
}

func (r *relay) track(idv any, f *flight) {
	if id := idBytes(idv, true); id != nil {
		r.flightMu.Lock()
		if _, dup := r.inflight[string(id)]; !dup {
			r.inflight[string(id)] = f
		}
		r.flightMu.Unlock()
	}
}

func (r *relay) untrack(key string) *flight {
	r.flightMu.Lock()
	defer r.flightMu.Unlock()
	f := r.inflight[key]
	delete(r.inflight, key)
	return f
}

func (r *relay) info() string {
	r.flightMu.Lock()
	defer r.flightMu.Unlock()
	return r.serverInfo
}

// cancelled records the end of a call the client cancelled.
func (r *relay) cancelled(idv, reason any) {
	id := idBytes(idv, idv != nil)
	if id == nil {
		return
	}
	f := r.untrack(string(id))
	if f == nil || f.method != "tools/call" {
		return
	}
	why, _ := reason.(string)
	out, _ := receipts.HashJSON(map[string]any{"cancelled": why})
	r.record(f, receipts.PostToolUseFailure, receipts.ReasonCancelled, out)
}

// record appends the execution receipt of a call, linked to the decision
// the flight holds. It runs on the server loop after the response is
// relayed.
func (r *relay) record(f *flight, event, reason, outputHash string) {
	_, err := r.cfg.Gate.Record(gate.Event{HookEvent: event, SessionID: r.cfg.SessionID, Agent: r.agent,
		ToolName: f.tool, ToolUseID: f.toolUseID, ToolInputHash: f.inputHash, ToolOutputHash: outputHash, Reason: reason,
		Decision: f.decision})
	if err != nil {
		r.log.Error("mcp: recording an execution failed", "tool", f.tool, "err", err)
	}
}

// serverMaxLine caps the server messages the relay inspects; longer ones
// are streamed through untouched.
const serverMaxLine = 64 << 20

// serverLoop relays the server's messages to the client and records the
// outcome of the calls they answer. When the server's stream ends, the
// calls still in flight are recorded as ended by the server's exit.
func (r *relay) serverLoop(out io.Reader) error {
	lr := newLineReader(out, serverMaxLine)
	for {
		line, long, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			r.serverGone()
			return fmt.Errorf("reading from the server: %w", err)
		}
		if long {
			r.clientMu.Lock()
			_, werr := r.client.Write(line)
			if werr == nil {
				werr = lr.rest(func(b []byte) error { _, err := r.client.Write(b); return err })
			}
			r.clientMu.Unlock()
			if werr != nil && werr != io.EOF {
				r.serverGone()
				return fmt.Errorf("relaying to the client: %w", werr)
			}
			continue
		}
		out := line
		if r.cfg.HideDenied {
			out = r.hideDenied(line)
		}
		r.clientMu.Lock()
		_, werr := r.client.Write(out)
		r.clientMu.Unlock()
		if werr != nil {
			r.serverGone()
			return fmt.Errorf("writing to the client: %w", werr)
		}
		r.fromServer(line)
	}
	if r.serverGone() > 0 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// fromServer acts on a relayed server message: the response to a call in
// flight is recorded, the server's identity noted.
func (r *relay) fromServer(line []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil || len(msg.ID) == 0 {
		return
	}
	if bytes.Contains(msg.Result, []byte(`serverInfo`)) {
		r.noteServerInfo(msg.Result)
	}
	id := validID(msg.ID)
	if id == nil {
		return
	}
	f := r.untrack(string(id))
	if f != nil && f.method == "tools/list" && len(msg.Result) > 0 {
		r.toolsList(msg.Result)
	}
	if f == nil || f.method != "tools/call" {
		return
	}
	event, out := receipts.PostToolUse, msg.Result
	if len(msg.Error) > 0 {
		event, out = receipts.PostToolUseFailure, msg.Error
	} else {
		var res struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(msg.Result, &res) == nil && res.IsError {
			event = receipts.PostToolUseFailure
		}
	}
	r.record(f, event, "", outputHash(out))
}

// hideDenied returns a tools/list response without the tools the policy
// always denies (see Config.HideDenied); any other line is returned as is.
func (r *relay) hideDenied(line []byte) []byte {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(line, &msg) != nil || len(msg.Result) == 0 {
		return line
	}
	id := validID(msg.ID)
	if id == nil {
		return line
	}
	r.flightMu.Lock()
	f := r.inflight[string(id)]
	r.flightMu.Unlock()
	if f == nil || f.method != "tools/list" || r.cfg.Gate.Engine == nil {
		return line
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return line
	}
	res, _ := m["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	keep := make([]any, 0, len(tools))
	for _, t := range tools {
		if o, ok := t.(map[string]any); ok {
			if name, ok := o["name"].(string); ok && r.alwaysDenied(name) {
				continue
			}
		}
		keep = append(keep, t)
	}
	if len(keep) == len(tools) {
		return line
	}
	res["tools"] = keep
	b, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return append(b, '\n')
}

// alwaysDenied reports whether the policy denies a call to tool with empty
// arguments and a verified proposal backed by trusted evidence.
func (r *relay) alwaysDenied(tool string) bool {
	mc := &policy.MCPContext{ServerCommand: r.cmd, ServerInfo: r.info(), HighImpact: r.high[tool] || r.high["*"],
		PIC: policy.PICContext{Present: true, Verified: true, Impact: "read", Trusted: []string{"evidence"}}}
	d := gate.Evaluate(context.Background(), r.cfg.Gate.Engine, []policy.Call{{Agent: r.agent,
		ToolName: "mcp__" + r.cfg.Server + "__" + tool, ToolInput: []byte("{}"), Cwd: r.cfg.Gate.Store.Project, MCP: mc}},
		r.cfg.Gate.Store.Project, r.cfg.Gate.Home)
	return d.Decision != policy.Allow
}

// toolsList receipts a tools/list result by the hash of its tools, the
// first time it is seen in the session and whenever it changes, so that a
// server that swaps its tool definitions mid-session is on the record.
func (r *relay) toolsList(result json.RawMessage) {
	var res struct {
		Tools json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &res) != nil || len(res.Tools) == 0 {
		return
	}
	h := outputHash(res.Tools)
	if r.toolsSeen[h] {
		return
	}
	if len(r.toolsSeen) > 0 {
		r.log.Warn("mcp: the server's tool list changed", "tools_hash", h)
	}
	r.toolsSeen[h] = true
	_, err := r.cfg.Gate.Record(gate.Event{Lifecycle: receipts.LifecycleToolsList, SessionID: r.cfg.SessionID,
		Agent: r.agent, ToolName: "mcp__" + r.cfg.Server, ToolOutputHash: h})
	if err != nil {
		r.log.Error("mcp: recording the tool list failed", "err", err)
	}
}

// outputHash is the tool_output_hash of a result or error: "sha256:" + hex
// SHA-256 of its JCS form, as for the hooks.
func outputHash(raw json.RawMessage) string {
	if h, err := receipts.CanonicalizeJSON(raw); err == nil {
		return sha256Ref(h)
	}
	// Not strictly valid JSON (or over the parser's limits): the hash of
	// the bytes as sent, marked as such.
	return "raw-" + sha256Ref(raw)
}

// noteServerInfo remembers the server's name and version from an
// initialize result (serverInfo) or a 2026-07-28 result's _meta.
func (r *relay) noteServerInfo(result json.RawMessage) {
	type info struct{ Name, Version string }
	var res struct {
		ServerInfo *info `json:"serverInfo"`
		Meta       struct {
			ServerInfo *info `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if json.Unmarshal(result, &res) != nil {
		return
	}
	i := res.ServerInfo
	if i == nil {
		i = res.Meta.ServerInfo
	}
	if i == nil {
		return
	}
	r.flightMu.Lock()
	r.serverInfo = strings.TrimSpace(i.Name + " " + i.Version)
	r.flightMu.Unlock()
}

// serverGone records every call still in flight as ended by the server's
// exit and returns how many there were.
func (r *relay) serverGone() int {
	r.flightMu.Lock()
	var calls []*flight
	for k, f := range r.inflight {
		if f.method == "tools/call" {
			calls = append(calls, f)
		}
		delete(r.inflight, k)
	}
	r.flightMu.Unlock()
	out, _ := receipts.HashJSON(map[string]any{"server_exited": true})
	for _, f := range calls {
		r.record(f, receipts.PostToolUseFailure, receipts.ReasonServerExited, out)
	}
	return len(calls)
}

func sha256Ref(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
