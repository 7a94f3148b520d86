package hook_test

import (
	"fmt"

	"github.com/docketlog/docket/hook"
)

// Parsing a Gemini CLI BeforeTool event: the call is mapped to the Claude
// Code tool the policy decides.
func ExampleParseEvent() {
	ev, err := hook.ParseEvent(hook.Gemini, hook.Pre, []byte(`{
		"session_id": "s1", "cwd": "/home/user/project", "hook_event_name": "BeforeTool",
		"tool_name": "run_shell_command", "tool_input": {"command": "go vet ./..."}
	}`), "/home/user/project")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.ToolName, "->", ev.Calls[0].ToolName, string(ev.Calls[0].ToolInput))
	// Output:
	// run_shell_command -> Bash {"command":"go vet ./...","description":""}
}
