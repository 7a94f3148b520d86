package reconcile

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/docketlog/docket/internal/strictjson"
)

// ReadCodex reads a Codex rollout file (~/.codex/sessions/YYYY/MM/DD/
// rollout-*.jsonl, the transcript_path of its hook events): one JSON
// object a line, {"timestamp", "type", "payload"}. The first is the
// session_meta (the session id and cwd). A call is a response_item whose
// payload is a function_call (name, arguments as a JSON string), a
// custom_tool_call (name, input as a string: apply_patch) or a
// local_shell_call (action); its result is the *_output item with the same
// call_id. The input hashed is the arguments parsed (function_call), or
// {"input": input} (custom_tool_call), or the action (local_shell_call).
func ReadCodex(ctx context.Context, path string) (*Record, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("reading the rollout: %w", err)
	}
	rec := &Record{Agent: Codex}
	name := filepath.Base(path)
	var h hasher
	h.add(name, data)
	rec.Files = []string{name}
	var c calls
	cut, err := parseCodex(name, data, rec, &c)
	if err != nil {
		return nil, fmt.Errorf("reading the rollout: %w", err)
	}
	rec.Truncated, rec.Hash, rec.Calls = cut, h.hash(), c.list
	return rec, nil
}

func parseCodex(name string, data []byte, rec *Record, c *calls) (string, error) {
	return lines(name, data, func(n int, e map[string]any) error {
		p, ok := e["payload"].(map[string]any)
		if !ok {
			return nil // other items carry no call
		}
		switch str(e, "type") {
		case "session_meta":
			if rec.SessionID == "" {
				rec.SessionID = str(p, "id")
				rec.Cwd = str(p, "cwd")
			}
			return nil
		case "response_item":
		default:
			return nil
		}
		pos := fmt.Sprintf("%s:%d", name, n)
		id := str(p, "call_id")
		switch str(p, "type") {
		case "function_call":
			var input any = map[string]any{}
			if args := str(p, "arguments"); args != "" {
				v, err := strictjson.Parse([]byte(args))
				if err != nil {
					return fmt.Errorf("function_call arguments: %w", err)
				}
				input = v
			}
			return c.add(Call{Tool: str(p, "name"), ID: id, InputHash: hashOf(input), Position: pos})
		case "custom_tool_call":
			return c.add(Call{Tool: str(p, "name"), ID: id, InputHash: hashOf(map[string]any{"input": str(p, "input")}), Position: pos})
		case "local_shell_call":
			return c.add(Call{Tool: "local_shell", ID: id, InputHash: hashOf(p["action"]), Position: pos})
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			c.result(id, p["output"])
		}
		return nil
	})
}
