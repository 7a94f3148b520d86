// Package reconcile reconciles what an agent did with what the gate
// decided (DESIGN §3.1, issue 26). It reads the agent's own record of a
// session — Claude Code's transcript and its subagents' transcripts, Codex's
// rollout file, Gemini CLI's chat recording — and matches every tool call in
// it to a decision receipt of the session's chain: by the agent's call id
// where it has one, else by tool name and input hash, in order. A call with
// no decision is signed into the chain as an unmediated_call receipt; the
// session_end then carries the record's hash (transcript_hash), so that the
// record the reconciliation read is fixed.
//
// A record is input an attacker may have written: reads are bounded
// (MaxFileSize, MaxFiles, MaxCalls), every line must be one JSON object,
// and anything else is an error naming the file and line, never a silent
// pass. A record cut in its last line (an agent killed mid-write) is read up
// to the cut and reported as truncated.
package reconcile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/internal/safefile"
	"github.com/docketlog/docket/internal/strictjson"
)

// Bounds of what a reconciliation reads.
const (
	// MaxFileSize is the largest record file read, in bytes.
	MaxFileSize = 256 << 20
	// MaxFiles is how many files one record may have (Claude Code's main
	// transcript and its subagents').
	MaxFiles = 1024
	// MaxCalls is how many tool calls one record may hold.
	MaxCalls = 1_000_000
	// MaxLine is the longest line of a record, in bytes.
	MaxLine = 64 << 20
)

// Agent names, as receipts name them (payload member agent).
const (
	Claude = "claude-code"
	Gemini = "gemini-cli"
	Codex  = "codex"
)

// A Call is one tool call in an agent's record.
type Call struct {
	// Tool is the tool as the record names it (Bash, mcp__github__create_issue,
	// run_shell_command, exec_command).
	Tool string
	// ID is the agent's call id (Claude Code's tool_use id, Codex's
	// call_id, Gemini CLI's tool call id), "" when it has none.
	ID string
	// InputHash is "sha256:" + hex SHA-256 of JCS(the call's input), as
	// the hooks compute tool_input_hash.
	InputHash string
	// Position is where the call stands: the file, relative to the
	// directory of the record's main file, ":" and the 1-based line.
	Position string
	// Ran is set when the record holds a result of the call; OutputHash
	// is then the hash of that result, built like InputHash.
	Ran        bool
	OutputHash string
}

// Server returns the MCP server a call goes to, from a tool named
// mcp__<server>__<tool> (Claude Code's and Gemini CLI's naming), or "".
// A server whose own name holds "__" is cut at its first one.
func (c Call) Server() string {
	rest, ok := strings.CutPrefix(c.Tool, "mcp__")
	if !ok {
		return ""
	}
	server, _, _ := strings.Cut(rest, "__")
	return server
}

// Finished returns the calls whose result the record holds. Before the
// session ends (at Stop, SubagentStop), only these are reconciled: a call
// whose result is recorded has passed its pre hook, whose decision is
// appended before the tool runs, while a call without one may still be
// between the record and its hook (a subagent running beside the one that
// stopped). At the session's end every call is reconciled.
func Finished(calls []Call) []Call {
	var out []Call
	for _, c := range calls {
		if c.Ran || c.OutputHash != "" {
			out = append(out, c)
		}
	}
	return out
}

// A Record is an agent's record of one session, as read.
type Record struct {
	Agent string
	// SessionID is the session the record says it is, if it says.
	SessionID string
	// Cwd is the working directory the record names, if it does (Claude
	// Code, Codex); ProjectHash the hex SHA-256 of the project's root that
	// Gemini CLI's recording names instead.
	Cwd, ProjectHash string
	// Files are the files read, in order, relative to the directory of
	// the main file (the first).
	Files []string
	// Hash is "sha256:" + hex SHA-256 of the record's bytes when it is one
	// file; of several, the SHA-256 of the lines "<hex SHA-256 of the
	// file>  <file>\n" in order (sha256sum's output).
	Hash string
	// Truncated, if set, says where the record was cut: its last line was
	// incomplete and not read.
	Truncated string
	// Calls are the tool calls, in the record's order (the main file's,
	// then each subagent file's).
	Calls []Call
}

// TranscriptHash is what the session_end carries for the record: its Hash,
// or, when it was truncated, why it could not be read whole.
func (r *Record) TranscriptHash() string {
	if r.Truncated != "" {
		return fmt.Sprintf("unreadable: truncated at %s (%s of the bytes read)", r.Truncated, r.Hash)
	}
	return r.Hash
}

// Unreadable is the transcript_hash of a record that could not be read.
func Unreadable(err error) string {
	return "unreadable: " + oneLine(err.Error())
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Read reads the record of agent (Claude, Gemini or Codex) at path.
func Read(ctx context.Context, agent, path string) (*Record, error) {
	switch agent {
	case Claude:
		return ReadClaude(ctx, path)
	case Codex:
		return ReadCodex(ctx, path)
	case Gemini:
		return ReadGemini(ctx, path)
	}
	return nil, fmt.Errorf("reading the record: unknown agent %q", agent)
}

// hasher builds a Record's Hash over the files read.
type hasher struct {
	sums  []string
	names []string
}

func (h *hasher) add(name string, data []byte) {
	sum := sha256.Sum256(data)
	h.sums = append(h.sums, hex.EncodeToString(sum[:]))
	h.names = append(h.names, name)
}

func (h *hasher) hash() string {
	if len(h.sums) == 1 {
		return "sha256:" + h.sums[0]
	}
	var b strings.Builder
	for i := range h.sums {
		fmt.Fprintf(&b, "%s  %s\n", h.sums[i], h.names[i])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// readFile reads one record file: a regular file (not a FIFO, device or
// directory) of at most MaxFileSize bytes.
func readFile(ctx context.Context, path string) ([]byte, error) {
	return safefile.Read(ctx, path, MaxFileSize)
}

// lines calls fn with each non-blank line of a JSONL file and its 1-based
// number, parsed as one JSON object. A last line without a newline that
// does not parse is a cut record: lines returns its number in truncated
// and no error. Any other line that is not one JSON object is an error.
func lines(name string, data []byte, fn func(n int, obj map[string]any) error) (truncated string, err error) {
	n := 0
	for len(data) > 0 {
		n++
		line, rest, found := bytes.Cut(data, []byte("\n"))
		data = rest
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > MaxLine {
			return "", fmt.Errorf("%s:%d: line over %d bytes", name, n, MaxLine)
		}
		obj, perr := parseObject(line)
		if perr != nil {
			if !found {
				return fmt.Sprintf("%s:%d", name, n), nil
			}
			return "", fmt.Errorf("%s:%d: %w", name, n, perr)
		}
		if err := fn(n, obj); err != nil {
			return "", fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	return "", nil
}

// parseObject parses one JSON object strictly (duplicate and fold-equal
// member names refused). A document over strictjson's size bound (a large
// file written or read by a tool) is parsed by encoding/json, after a
// strict check that it is one valid JSON value.
func parseObject(line []byte) (map[string]any, error) {
	if len(line) <= strictjson.MaxDocumentSize {
		return strictjson.ParseObject(line)
	}
	if !json.Valid(line) {
		return nil, errors.New("not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// hashOf is "sha256:" + hex SHA-256 of JCS(v); "" when v cannot be
// canonicalized.
func hashOf(v any) string {
	canon, err := strictjson.Canonicalize(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// calls collects a record's calls, bounded by MaxCalls, and their results
// by call id.
type calls struct {
	list    []Call
	results map[string][]int // id → indexes in list without a result yet
}

func (c *calls) add(call Call) error {
	if len(c.list) >= MaxCalls {
		return fmt.Errorf("more than %d tool calls", MaxCalls)
	}
	if c.results == nil {
		c.results = make(map[string][]int)
	}
	c.list = append(c.list, call)
	if call.ID != "" && !call.Ran {
		c.results[call.ID] = append(c.results[call.ID], len(c.list)-1)
	}
	return nil
}

// result marks the earliest call with id that has no result yet as run.
func (c *calls) result(id string, output any) {
	q := c.results[id]
	if len(q) == 0 {
		return
	}
	c.results[id] = q[1:]
	c.list[q[0]].Ran = true
	c.list[q[0]].OutputHash = hashOf(output)
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// relName is path relative to dir, or path itself when it is not below it.
func relName(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return path
}

// statRegular reports whether path is a regular file (following symlinks).
func statRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
