package reconcile

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ReadClaude reads a Claude Code transcript: the session's JSONL file (the
// transcript_path of its hook events) and the transcripts of its
// subagents. Claude Code 2.1 writes each subagent's transcript to
// <session>/subagents/agent-<id>.jsonl beside the session's file (entries
// with isSidechain true); older versions wrote subagent entries into the
// session's file itself, with isSidechain true. Both are read.
//
// A call is a tool_use block of an assistant entry's message content; its
// result is a tool_result block with the same tool_use_id in a later user
// entry of the same file. Claude Code writes one entry per content block
// of a streamed message and sometimes repeats an entry: a tool_use id seen
// twice in one message (message.id) is one call.
func ReadClaude(ctx context.Context, path string) (*Record, error) {
	dir := filepath.Dir(path)
	files := []string{path}
	subs, err := filepath.Glob(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	slices.Sort(subs)
	files = append(files, subs...)
	if len(files) > MaxFiles {
		return nil, fmt.Errorf("reading the transcript: %d files, over %d", len(files), MaxFiles)
	}
	rec := &Record{Agent: Claude}
	var h hasher
	var c calls
	for _, f := range files {
		data, err := readFile(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("reading the transcript: %w", err)
		}
		name := relName(dir, f)
		h.add(name, data)
		rec.Files = append(rec.Files, name)
		cut, err := parseClaude(name, data, rec, &c)
		if err != nil {
			return nil, fmt.Errorf("reading the transcript: %w", err)
		}
		if cut != "" {
			rec.Truncated = cut
		}
	}
	rec.Hash, rec.Calls = h.hash(), c.list
	return rec, nil
}

// parseClaude reads the entries of one Claude Code transcript file.
func parseClaude(name string, data []byte, rec *Record, c *calls) (string, error) {
	seen := make(map[[2]string]bool) // message id, tool_use id
	return lines(name, data, func(n int, e map[string]any) error {
		typ := str(e, "type")
		if typ != "assistant" && typ != "user" {
			return nil // attachments, API request logs, queue operations…
		}
		if rec.SessionID == "" {
			rec.SessionID = str(e, "sessionId")
		}
		if rec.Cwd == "" {
			rec.Cwd = str(e, "cwd")
		}
		msg, ok := e["message"].(map[string]any)
		if !ok {
			return fmt.Errorf("%s entry without a message object", typ)
		}
		blocks, ok := msg["content"].([]any)
		if !ok {
			return nil // a plain-text message
		}
		for _, b := range blocks {
			block, ok := b.(map[string]any)
			if !ok {
				return fmt.Errorf("content block is not an object")
			}
			switch str(block, "type") {
			case "tool_use":
				if typ != "assistant" {
					return fmt.Errorf("tool_use in a %s entry", typ)
				}
				id, tool := str(block, "id"), str(block, "name")
				input, ok := block["input"].(map[string]any)
				if tool == "" || !ok {
					return fmt.Errorf("tool_use without a name or an input object")
				}
				key := [2]string{str(msg, "id"), id}
				if id != "" && key[0] != "" && seen[key] {
					continue
				}
				seen[key] = true
				if err := c.add(Call{Tool: tool, ID: id, InputHash: hashOf(input), Position: fmt.Sprintf("%s:%d", name, n)}); err != nil {
					return err
				}
			case "tool_result":
				if typ == "user" {
					c.result(str(block, "tool_use_id"), block["content"])
				}
			}
		}
		return nil
	})
}
