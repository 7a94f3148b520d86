package reconcile

import (
	"strings"
	"testing"
)

// The parsers of the agents' records never crash, whatever the record
// holds, and every call they return stands somewhere. Seeds in
// testdata/fuzz run in plain go test.

func checkCalls(t *testing.T, calls []Call) {
	for i, c := range calls {
		if !strings.Contains(c.Position, ":") {
			t.Fatalf("call %d = %+v: no position", i, c)
		}
	}
}

func FuzzClaude(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","sessionId":"s","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := &Record{}
		var c calls
		if _, err := parseClaude("f.jsonl", data, rec, &c); err == nil {
			checkCalls(t, c.list)
		}
	})
}

func FuzzCodex(f *testing.F) {
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"s","cwd":"/p"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c"}}` + "\n" +
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := &Record{}
		var c calls
		if _, err := parseCodex("f.jsonl", data, rec, &c); err == nil {
			checkCalls(t, c.list)
		}
	})
}

func FuzzGemini(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s","projectHash":"h"}` + "\n" +
		`{"id":"m","type":"gemini","toolCalls":[{"id":"c","name":"read_file","args":{"file_path":"/x"},"status":"success","result":[]}]}` + "\n" +
		`{"$set":{"lastUpdated":"x"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec := &Record{}
		if calls, _, err := parseGemini("f.jsonl", data, rec); err == nil {
			checkCalls(t, calls)
		}
	})
}
