package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// JSON-RPC 2.0 error codes the relay answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603
)

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
			r.replyError(nil, codeInvalidRequest, fmt.Sprintf("docket mcp: message longer than %d bytes; it was not relayed", r.cfg.MaxLine))
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
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	cm, ref := readClient(line, &r.tools)
	switch {
	case ref != nil:
		return r.refuse(ctx, ref)
	case cm.call != nil && cm.method != "tools/call":
		return r.gatedRequest(ctx, cm)
	case cm.call != nil:
		return r.toolsCall(ctx, cm)
	case !cm.request:
		// The client's response to a request of the server's.
		return r.toServer(cm.line)
	case cm.id == nil:
		if cm.method == "notifications/cancelled" {
			if p, ok := cm.m["params"].(map[string]any); ok {
				r.cancelled(p["requestId"], p["reason"])
			}
		}
		return r.toServer(cm.line)
	}
	f := &flight{method: cm.method}
	if p, ok := cm.m["params"].(map[string]any); ok && cm.method == "tools/list" {
		_, f.cursor = p["cursor"]
	}
	if err := r.flights.add(string(cm.id), f); err != nil {
		r.replyError(cm.id, codeInvalidRequest, "docket mcp: "+err.Error()+"; it was not relayed")
		return nil
	}
	return r.forward(cm.id, nil, cm.line)
}

// A clientMsg is a client message every parser reads as the relay does.
type clientMsg struct {
	m       map[string]any
	request bool // it has a method: a request or a notification
	method  string
	id      []byte // the id's JCS form; nil for a notification
	line    []byte // what is forwarded
	call    *callMsg
}

// A callMsg is a tools/call as the relay decides it.
type callMsg struct {
	ci       callInfo
	name     string
	args     map[string]any // without __pic and __pic_request_id
	input    []byte         // JCS(args)
	proposal any            // arguments.__pic
	hasPIC   bool
}

// A refusal is why the relay does not relay a client message.
type refusal struct {
	why string
	rd  *reading
	// call is set when the message was read, and is a tools/call whose
	// params cannot be decided on (ci names it).
	call *callInfo
	id   []byte
}

// readClient reads a client line (not blank). Every message the relay
// relays, it relays on this reading; refused messages are answered from
// the refusal (see refuse). t gives the tools' input schemas.
func readClient(line []byte, t *tools) (*clientMsg, *refusal) {
	body := bytes.TrimSpace(line)
	rd := readBytes(body)
	no := func(why string) (*clientMsg, *refusal) { return nil, &refusal{why: why, rd: rd} }
	if rd.err != nil {
		return no("")
	}
	if rd.batch {
		return no("JSON-RPC batches are not relayed (MCP removed them in 2025-06-18); send each message on its own")
	}
	v, perr := strictjson.Parse(body)
	switch {
	case perr != nil:
		return no("the message is not strictly valid JSON (" + perr.Error() + ")")
	case rd.ambiguous != "":
		return no("parsers read the message differently: " + rd.ambiguous)
	case rd.inexact:
		return no("a number is not exact in every parser (integers must be within ±(2^53-1), " +
			"other numbers written as their IEEE double's shortest decimal, not -0)")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return no("the message is not a JSON-RPC object")
	}
	cm := &clientMsg{m: m, line: line}
	methodv, request := m["method"]
	cm.request = request
	if cm.method, ok = methodv.(string); request && (!ok || cm.method == "") {
		return no("method is not a non-empty string")
	}
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if raw, ok := rd.member("id"); ok {
		if cm.id = validID(raw); cm.id == nil {
			return no("the id is not a string or an integer within ±(2^53-1)")
		}
	}
	switch {
	case request && (hasResult || hasError):
		return no("a request (method) cannot have a result or an error")
	case !request && (cm.id == nil || hasResult == hasError):
		return no("a response needs an id and one of result and error")
	case cm.method == "tools/call":
		return readCall(cm, rd, t)
	case gatedMethods[cm.method] != "":
		return readGated(cm, rd, gatedMethods[cm.method])
	}
	return cm, nil
}

// readCall reads the params of a tools/call.
func readCall(cm *clientMsg, rd *reading, t *tools) (*clientMsg, *refusal) {
	c := &callMsg{}
	no := func(why string) (*clientMsg, *refusal) {
		return nil, &refusal{why: why, rd: rd, call: &c.ci, id: cm.id}
	}
	if cm.id == nil {
		return no("tools/call without an id (a notification) is not relayed")
	}
	c.ci.toolUseID = "jsonrpc:" + string(cm.id)
	params, ok := cm.m["params"].(map[string]any)
	if !ok {
		return no("tools/call params is not an object")
	}
	if c.name, ok = params["name"].(string); !ok || c.name == "" {
		return no("tools/call params.name is not a non-empty string")
	}
	c.ci.tool = c.name // the relay prefixes mcp__<server>__
	if reservedTool(c.name) {
		return no("tools/call params.name " + quote(c.name) + " names a request docket mcp gates itself, not a tool")
	}
	if meta, ok := params["_meta"].(map[string]any); ok {
		var v any
		v, c.ci.stateless = meta["io.modelcontextprotocol/protocolVersion"]
		c.ci.protocol, _ = v.(string)
	}
	c.args = map[string]any{}
	if a, ok := params["arguments"]; ok {
		// null too: the TypeScript SDK refuses it where Go reads {}.
		if c.args, ok = a.(map[string]any); !ok {
			return no("tools/call params.arguments is not an object")
		}
	}
	var hasReqID bool
	c.proposal, c.hasPIC = c.args["__pic"]
	_, hasReqID = c.args["__pic_request_id"]
	if c.hasPIC || hasReqID {
		stripped := make(map[string]any, len(c.args))
		for k, v := range c.args {
			if k != "__pic" && k != "__pic_request_id" {
				stripped[k] = v
			}
		}
		c.args = stripped
		// The call is relayed without its proposal: the arguments
		// forwarded are the arguments decided on.
		p := maps.Clone(params)
		p["arguments"] = c.args
		m := maps.Clone(cm.m)
		m["params"] = p
		out, err := strictjson.Canonicalize(m)
		if err != nil {
			return no("tools/call: " + err.Error())
		}
		cm.line = out
	}
	var err error
	if c.input, err = strictjson.Canonicalize(c.args); err != nil {
		return no("tools/call arguments: " + err.Error())
	}
	c.ci.inputHash = sha256Ref(c.input) // receipts.HashJSON(args), without canonicalizing twice
	if why := t.checkArguments(c.name, c.args); why != "" {
		return no("the tools/call message was not relayed: parsers read the arguments differently: " + why)
	}
	cm.call = c
	return cm, nil
}

// forward writes a request to the server; from then on, a response may
// answer it.
func (r *relay) forward(id []byte, decision *store.Pending, line []byte) error {
	if err := r.flights.forward(string(id), decision); err != nil {
		return nil // cancelled meanwhile: not written
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

// refuse answers a client message the relay does not relay. A tools/call
// (any member that folds like method naming tools/call) is denied, and the
// deny is signed; a request is answered with Invalid Request, its id when
// the relay reads one id (null otherwise, as JSON-RPC 2.0 says); a
// response of the client's is answered to the server with an error, so
// that the server does not wait for it; a notification is dropped. A line
// that is not JSON is answered with Parse error.
func (r *relay) refuse(ctx context.Context, ref *refusal) error {
	rd := ref.rd
	switch {
	case rd.err != nil:
		r.replyError(nil, codeParseError, "docket mcp: the message is not one JSON value; it was not relayed")
		return nil
	case ref.call != nil:
		ci := *ref.call
		if ci.tool != "" {
			ci.tool = "mcp__" + r.cfg.Server + "__" + ci.tool
		}
		r.refuseCall(ctx, ref.id, false, ci, ref.why, "")
		return nil
	}
	r.log.Warn("mcp: client message refused", "why", ref.why)
	elems := [][]member{rd.members}
	if rd.batch {
		elems = rd.elems
	}
	for _, e := range elems {
		if callLike(e) {
			id := answerID(rd.members)
			ci := callInfo{}
			if id != nil {
				ci.toolUseID = "jsonrpc:" + string(id)
			}
			r.refuseCall(ctx, id, rd.batch || rd.has("id"), ci, "the tools/call message was not relayed: "+ref.why, "")
			return nil
		}
	}
	id := answerID(rd.members)
	switch {
	case !rd.batch && !rd.has("method") && (rd.has("result") || rd.has("error")):
		if id != nil {
			return r.toServer(errorLine(id, codeInvalidRequest, "docket mcp: the client's response was not relayed: "+ref.why))
		}
	case rd.batch || rd.has("id") || !rd.has("method"):
		r.replyError(id, codeInvalidRequest, "docket mcp: the message was not relayed: "+ref.why)
	}
	return nil
}

// answerID returns the id to answer a refused message with: its one id,
// when no other member folds like "id" and it is valid; else nil (null).
func answerID(ms []member) []byte {
	ids := foldedMembers(ms, "id")
	if len(ids) != 1 || ids[0].name != "id" {
		return nil
	}
	return validID(ids[0].raw)
}

// callLike reports whether any parser could read a message as a
// tools/call: a member that folds like method names it.
func callLike(ms []member) bool {
	for _, m := range foldedMembers(ms, "method") {
		if v, err := strictjson.Parse(m.raw); err == nil && v == "tools/call" {
			return true
		}
	}
	return false
}

// idKey returns the JCS form of a parsed request id (see validID), or nil.
func idKey(v any) []byte {
	b, err := strictjson.Canonicalize(v)
	if err != nil {
		return nil
	}
	return validID(b)
}

// serverMaxLine caps the server messages the relay holds in memory;
// longer ones are spooled to disk (serverLine).
var serverMaxLine = 64 << 20

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
		msg := inMemory(line)
		if long {
			if msg, err = lr.spool(line); err != nil {
				r.log.Error("mcp: a server message was dropped", "err", err)
				continue
			}
		}
		err = r.fromServer(msg)
		msg.close()
		if err != nil {
			r.serverGone()
			return err
		}
	}
	if r.serverGone() > 0 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// fromServer handles one server message. A response is relayed only when
// it answers a request the relay forwarded and has not seen answered, and
// every parser reads it as the relay does; when a response to a request
// in flight is not relayed, the client gets an error in its place, and a
// call's execution receipt hashes that error. Requests and notifications
// of the server's pass unless a parser could read them otherwise. An error
// returned is the client's stream failing.
func (r *relay) fromServer(msg *serverLine) error {
	sv := readServer(msg)
	if sv.drop != "" {
		r.log.Warn("mcp: a server message was dropped", "why", sv.drop)
		return nil
	}
	if !sv.response {
		if m, _ := sv.rd.member("method"); string(m) == `"notifications/tools/list_changed"` {
			r.tools.changed()
		}
		return r.toClient(msg)
	}
	f := r.flights.answer(string(sv.id))
	if f == nil {
		r.log.Warn("mcp: a response to a request never forwarded, or already answered, was dropped", "id", string(sv.id))
		return nil
	}
	if f.own {
		r.ownList(f, sv, msg)
		return nil
	}
	if sv.refused != "" {
		r.log.Warn("mcp: a server response was not relayed", "method", f.method, "why", sv.refused)
		e := errorObject(codeInternalError, "docket mcp: the server's response was not relayed: "+sv.refused)
		r.writeClient(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(sv.id), "error": e})
		if f.tool != "" {
			h, _ := receipts.HashJSON(e)
			r.record(f, receipts.PostToolUseFailure, ReasonInvalidResponse, h)
		}
		return nil
	}
	out, listed := msg, ""
	if f.method == "tools/list" {
		listed = r.tools.list(sv.v, msg.sum, !f.cursor)
		if r.cfg.HideDenied && sv.v != nil {
			out = r.hideDenied(msg, sv.v)
		}
	}
	if err := r.toClient(out); err != nil {
		return err
	}
	if result, ok := sv.v["result"].(map[string]any); ok {
		r.noteServerInfo(result)
	}
	switch {
	case listed != "":
		r.toolsListed(listed)
	case f.tool != "": // a decided call: tools/call or a gated request
		event := receipts.PostToolUse
		if sv.failed {
			event = receipts.PostToolUseFailure
		}
		r.record(f, event, "", sv.outputHash(msg))
	}
	return nil
}

// ownList reads the answer to the relay's own tools/list (fetchTools).
func (r *relay) ownList(f *flight, sv serverView, msg *serverLine) {
	defer close(f.done)
	if sv.refused != "" || sv.v == nil {
		r.log.Warn("mcp: the server's answer to the relay's tools/list was not read", "why", sv.refused)
		return
	}
	if h := r.tools.list(sv.v, msg.sum, !f.cursor); h != "" {
		r.toolsListed(h)
	}
	result, _ := sv.v["result"].(map[string]any)
	f.next, _ = result["nextCursor"].(string)
}

// A serverView is how the relay reads one server message.
type serverView struct {
	rd *reading
	// drop says why the message is not relayed at all; "" when it may be.
	drop string
	// response is set for a message that some parser reads as a
	// response, to the request id. refused says why the relay does not
	// relay it as is; "" when it does.
	response bool
	id       []byte
	refused  string
	// failed is set for an error response or a result with isError.
	failed bool
	// v is the message, parsed strictly when it could be.
	v map[string]any
}

// readServer reads a server message.
func readServer(msg *serverLine) serverView {
	in, err := msg.reader()
	if err != nil {
		return serverView{drop: "reading a spooled message: " + err.Error()}
	}
	rd := read(in)
	sv := serverView{rd: rd}
	switch {
	case rd.err != nil:
		sv.drop = "not one JSON value"
		return sv
	case rd.batch:
		for _, e := range rd.elems {
			if len(foldedMembers(e, "method")) != 1 || len(foldedMembers(e, "result"))+len(foldedMembers(e, "error")) > 0 {
				sv.drop = "a batch holding a response"
				return sv
			}
		}
		sv.drop = rd.routedAmbiguous
		return sv
	case !rd.has("result") && !rd.has("error") && rd.has("method"):
		// A request or a notification of the server's.
		sv.drop = rd.routedAmbiguous
		if raw, _ := rd.member("method"); sv.drop == "" {
			if v, _ := strictjson.Parse(raw); v == "" || v == nil {
				sv.drop = "a request whose method is not a non-empty string" // some read it as a response
			} else if _, ok := v.(string); !ok {
				sv.drop = "a request whose method is not a non-empty string"
			}
		}
		return sv
	}
	// Anything that a parser could read as a response.
	sv.response = true
	raw, _ := rd.member("id")
	if sv.id = validID(raw); sv.id == nil {
		sv.drop = "a response without a valid id"
		return sv
	}
	res, hasResult := rd.memberOf("result")
	errm, hasError := rd.memberOf("error")
	switch {
	case rd.ambiguous != "":
		sv.refused = rd.ambiguous
	case rd.has("method"):
		sv.refused = "a response with a method (some read a request)"
	case hasResult == hasError:
		sv.refused = "a response needs one of result and error"
	case hasResult && res.first != '{':
		sv.refused = "result is not an object"
	case hasError && errm.first != '{':
		sv.refused = "error is not an object"
	}
	sv.failed = hasError || rd.isError == "t"
	if sv.refused == "" && msg.file == nil && len(msg.data) <= strictjson.MaxDocumentSize {
		sv.v, _ = strictjson.ParseObject(bytes.TrimSpace(msg.data))
	}
	return sv
}

// outputHash is the tool_output_hash of a response: "sha256:" + hex
// SHA-256 of the JCS form of its result or error, as for the hooks; when
// the message could not be parsed strictly (or is over the parser's
// limits), or holds a number that is not exact in every parser, the hash
// of its bytes as relayed ("raw-sha256:").
func (sv *serverView) outputHash(msg *serverLine) string {
	if sv.v == nil || sv.rd.inexact {
		return msg.sum
	}
	m, ok := sv.v["result"]
	if !ok {
		m = sv.v["error"]
	}
	c, err := strictjson.Canonicalize(m)
	if err != nil {
		return msg.sum
	}
	return sha256Ref(c)
}

// ReasonInvalidResponse is the reason of the execution receipt of a call
// whose response the relay did not relay (see fromServer): the client got
// an error in its place.
const ReasonInvalidResponse = "invalid_response"

// toClient relays a server message to the client.
func (r *relay) toClient(msg *serverLine) error {
	r.clientMu.Lock()
	defer r.clientMu.Unlock()
	if err := msg.writeTo(r.client); err != nil {
		return fmt.Errorf("writing to the client: %w", err)
	}
	return nil
}
