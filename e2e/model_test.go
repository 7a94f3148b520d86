package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// action is one tool call the scripted model asks for.
type action struct {
	kind string // "shell", "read", "patch" (Codex's native apply_patch) or "mcp" (Claude Code)
	arg  string // the command, the path, the patch text or the MCP tool's name
}

// modelServer is a scripted model on 127.0.0.1 speaking the API of one
// agent: Anthropic's Messages API (Claude Code), the Gemini API (Gemini
// CLI) or OpenAI's Responses API (Codex), always streaming. It is
// stateless: a request carrying n tool results is answered with the
// script's call n+1, and once the script is done with a short text. Every
// request body is kept, so that a test can check what reached the model.
type modelServer struct {
	t      *testing.T
	script []action
	URL    string
	// delegate makes the Anthropic model delegate: the main agent (the
	// request offering Claude Code's delegation tool) asks for one
	// subagent, whose requests run the script.
	delegate bool

	mu     sync.Mutex // guards bodies, calls
	bodies [][]byte
	calls  int // tool calls handed out
}

func newModelServer(t *testing.T, api string, script []action) *modelServer {
	m := &modelServer{t: t, script: script}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var h http.HandlerFunc
	switch api {
	case "anthropic":
		h = m.anthropic
	case "gemini":
		h = m.gemini
	case "openai":
		h = m.openai
	}
	srv := &http.Server{Handler: m.record(h)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	m.URL = "http://" + ln.Addr().String()
	return m
}

func (m *modelServer) record(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, append([]byte(r.Method+" "+r.URL.String()+"\n"), body...))
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}
}

// sent reports whether any request to the model contained s.
func (m *modelServer) sent(s string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.bodies {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// requests returns the method and URL of every request, for failures.
func (m *modelServer) requests() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var lines []string
	for _, b := range m.bodies {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		lines = append(lines, string(line))
	}
	return strings.Join(lines, "\n")
}

// next returns the script's action after n tool results, or false when the
// script is done.
func (m *modelServer) next(n int) (action, bool) {
	if n >= len(m.script) {
		return action{}, false
	}
	m.mu.Lock()
	m.calls = max(m.calls, n+1)
	m.mu.Unlock()
	return m.script[n], true
}

func sse(w http.ResponseWriter, events ...any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, e := range events {
		if ne, ok := e.(namedEvent); ok {
			b, _ := json.Marshal(ne.data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ne.name, b)
			continue
		}
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
}

type namedEvent struct {
	name string
	data map[string]any
}

type obj = map[string]any

// subagentPrompt is the prompt of the subagent a delegating model asks for.
const subagentPrompt = "run the subagent calls"

// anthropic answers POST /v1/messages as Claude Code's model.
func (m *modelServer) anthropic(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		json.NewEncoder(w).Encode(obj{"input_tokens": 100})
		return
	}
	var req struct {
		Tools    []obj `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	n := 0
	for _, msg := range req.Messages {
		var blocks []obj
		if json.Unmarshal(msg.Content, &blocks) == nil {
			for _, b := range blocks {
				if b["type"] == "tool_result" {
					n++
				}
			}
		}
	}
	var block obj
	var delta obj
	stop := "end_turn"
	delegation := ""
	for _, t := range req.Tools {
		if name, _ := t["name"].(string); m.delegate && (name == "Task" || name == "Agent") {
			delegation = name
		}
	}
	if len(req.Messages) > 0 && strings.Contains(string(req.Messages[0].Content), subagentPrompt) {
		delegation = "" // the subagent, which may delegate too: it runs the script
	}
	if delegation != "" {
		// The main agent: one delegation, then done.
		if n == 0 {
			in, _ := json.Marshal(obj{"description": "scripted subagent", "prompt": subagentPrompt, "subagent_type": "general-purpose"})
			block = obj{"type": "tool_use", "id": "toolu_delegate", "name": delegation, "input": obj{}}
			delta = obj{"type": "input_json_delta", "partial_json": string(in)}
			stop = "tool_use"
		} else {
			block = obj{"type": "text", "text": ""}
			delta = obj{"type": "text_delta", "text": "done"}
		}
	} else if a, ok := m.next(n); ok && len(req.Tools) > 0 {
		name, input := "Bash", obj{"command": a.arg, "description": "scripted call"}
		switch a.kind {
		case "read":
			name, input = "Read", obj{"file_path": a.arg}
		case "mcp":
			name, input = a.arg, obj{"message": "scripted"}
		}
		in, _ := json.Marshal(input)
		block = obj{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n+1), "name": name, "input": obj{}}
		delta = obj{"type": "input_json_delta", "partial_json": string(in)}
		stop = "tool_use"
	} else {
		block = obj{"type": "text", "text": ""}
		delta = obj{"type": "text_delta", "text": "done"}
	}
	msg := obj{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-scripted",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": obj{"input_tokens": 10, "output_tokens": 1}}
	if !req.Stream {
		block := block
		if stop == "tool_use" {
			var in obj
			json.Unmarshal([]byte(delta["partial_json"].(string)), &in)
			block["input"] = in
		} else {
			block["text"] = "done"
		}
		msg["content"], msg["stop_reason"] = []any{block}, stop
		json.NewEncoder(w).Encode(msg)
		return
	}
	sse(w,
		namedEvent{"message_start", obj{"type": "message_start", "message": msg}},
		namedEvent{"content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": block}},
		namedEvent{"content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": delta}},
		namedEvent{"content_block_stop", obj{"type": "content_block_stop", "index": 0}},
		namedEvent{"message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": obj{"output_tokens": 5}}},
		namedEvent{"message_stop", obj{"type": "message_stop"}},
	)
}

// gemini answers models/*:streamGenerateContent and :generateContent as
// Gemini CLI's model.
func (m *modelServer) gemini(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.URL.Path, "/models/") {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, ":countTokens") {
		json.NewEncoder(w).Encode(obj{"totalTokens": 100})
		return
	}
	var req struct {
		Contents []struct {
			Parts []obj `json:"parts"`
		} `json:"contents"`
		Tools []obj `json:"tools"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	n := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p["functionResponse"] != nil {
				n++
			}
		}
	}
	part := obj{"text": "done"}
	if a, ok := m.next(n); ok && len(req.Tools) > 0 {
		name, args := "run_shell_command", obj{"command": a.arg, "description": "scripted call"}
		if a.kind == "read" {
			name, args = "read_file", obj{"file_path": a.arg}
		}
		part = obj{"functionCall": obj{"name": name, "args": args}}
	}
	resp := obj{
		"candidates":    []any{obj{"content": obj{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": obj{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  "gemini-scripted",
	}
	if strings.Contains(r.URL.Path, ":streamGenerateContent") {
		sse(w, resp)
		return
	}
	json.NewEncoder(w).Encode(resp)
}

// openai answers POST /v1/responses as Codex's model (a provider with
// wire_api = "responses").
func (m *modelServer) openai(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Input []obj `json:"input"`
		Tools []obj `json:"tools"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	n := 0
	for _, it := range req.Input {
		if t, _ := it["type"].(string); t == "function_call_output" || t == "custom_tool_call_output" {
			n++
		}
	}
	tools := map[string]obj{}
	for _, t := range req.Tools {
		if name, _ := t["name"].(string); name != "" {
			tools[name] = t
		}
	}
	id := fmt.Sprintf("resp_%d", n)
	var item obj
	if a, ok := m.next(n); ok && len(req.Tools) > 0 {
		callID := fmt.Sprintf("call_%02d", n+1)
		switch {
		case a.kind == "patch" && tools["apply_patch"] != nil && tools["apply_patch"]["type"] == "custom":
			item = obj{"type": "custom_tool_call", "id": "ctc_" + callID, "call_id": callID, "name": "apply_patch", "input": a.arg, "status": "completed"}
		case a.kind == "patch" && tools["apply_patch"] != nil:
			args, _ := json.Marshal(obj{"input": a.arg})
			item = obj{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": "apply_patch", "arguments": string(args), "status": "completed"}
		default:
			cmd := a.arg
			if a.kind == "read" {
				cmd = "cat " + a.arg
			}
			var name string
			var args []byte
			switch {
			case tools["exec_command"] != nil:
				name = "exec_command"
				args, _ = json.Marshal(obj{"cmd": cmd})
			case tools["shell_command"] != nil:
				name = "shell_command"
				args, _ = json.Marshal(obj{"command": cmd})
			default:
				name = "shell"
				args, _ = json.Marshal(obj{"command": []string{"bash", "-lc", cmd}})
			}
			item = obj{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": string(args), "status": "completed"}
		}
	} else {
		item = obj{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
			"content": []any{obj{"type": "output_text", "text": "done", "annotations": []any{}}}}
	}
	sse(w,
		namedEvent{"response.created", obj{"type": "response.created", "response": obj{"id": id}}},
		namedEvent{"response.output_item.done", obj{"type": "response.output_item.done", "output_index": 0, "item": item}},
		namedEvent{"response.completed", obj{"type": "response.completed", "response": obj{"id": id,
			"usage": obj{"input_tokens": 10, "input_tokens_details": obj{"cached_tokens": 0}, "output_tokens": 1,
				"output_tokens_details": obj{"reasoning_tokens": 0}, "total_tokens": 11}}}},
	)
}
