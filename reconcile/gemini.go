package reconcile

import (
	"context"
	"fmt"
	"path/filepath"
)

// ReadGemini reads a Gemini CLI chat recording (~/.gemini/tmp/<project>/
// chats/session-*.jsonl, the transcript_path of its hook events). Gemini
// CLI 0.61 writes it as JSON lines: the session's metadata first
// (sessionId, projectHash), then each message record as it changes — a
// record with the id of an earlier one replaces it — and "$set" updates of
// the metadata. A call is an entry of a gemini message's toolCalls (id,
// name, args); its status success shows that it ran (an error may be
// Gemini CLI's own refusal, before any hook). A call stands where the last
// record holding it is.
func ReadGemini(ctx context.Context, path string) (*Record, error) {
	data, err := readFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("reading the chat recording: %w", err)
	}
	rec := &Record{Agent: Gemini}
	name := filepath.Base(path)
	var h hasher
	h.add(name, data)
	rec.Files = []string{name}
	list, cut, err := parseGemini(name, data, rec)
	if err != nil {
		return nil, fmt.Errorf("reading the chat recording: %w", err)
	}
	rec.Truncated, rec.Hash, rec.Calls = cut, h.hash(), list
	return rec, nil
}

func parseGemini(name string, data []byte, rec *Record) ([]Call, string, error) {
	type message struct {
		calls []Call
	}
	var order []string // message ids, in first-seen order
	msgs := make(map[string]*message)
	total := 0
	cut, err := lines(name, data, func(n int, e map[string]any) error {
		if _, ok := e["$set"]; ok {
			return nil
		}
		if sid := str(e, "sessionId"); sid != "" && rec.SessionID == "" {
			rec.SessionID, rec.ProjectHash = sid, str(e, "projectHash")
			return nil
		}
		id := str(e, "id")
		if id == "" || str(e, "type") != "gemini" {
			return nil
		}
		raw, _ := e["toolCalls"].([]any)
		var list []Call
		for _, r := range raw {
			tc, ok := r.(map[string]any)
			if !ok {
				return fmt.Errorf("tool call is not an object")
			}
			args, ok := tc["args"].(map[string]any)
			if !ok {
				args = map[string]any{}
			}
			call := Call{Tool: str(tc, "name"), ID: str(tc, "id"), InputHash: hashOf(args), Position: fmt.Sprintf("%s:%d", name, n)}
			if call.Tool == "" {
				return fmt.Errorf("tool call without a name")
			}
			// Only a success shows that the tool ran: Gemini CLI records
			// its own refusals (a path it will not read) as errors too.
			if res, ok := tc["result"]; ok && res != nil {
				call.OutputHash = hashOf(res)
			}
			call.Ran = str(tc, "status") == "success"
			list = append(list, call)
		}
		m := msgs[id]
		if m == nil {
			m = &message{}
			msgs[id] = m
			order = append(order, id)
		}
		total += len(list) - len(m.calls)
		if total > MaxCalls {
			return fmt.Errorf("more than %d tool calls", MaxCalls)
		}
		m.calls = list
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	var out []Call
	for _, id := range order {
		out = append(out, msgs[id].calls...)
	}
	return out, cut, nil
}
