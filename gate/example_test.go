package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// A gate without an agent protocol, as an MCP proxy uses it: open the
// project's gate, decide a call, let it run if it is allowed, record its
// execution.
func ExampleGate() {
	project, _ := os.MkdirTemp("", "docket-example-")
	defer os.RemoveAll(project)
	// What docket init writes: the issuer key and the default policy.
	s := store.Open(project)
	os.MkdirAll(s.PolicyDir(), 0o700)
	os.WriteFile(filepath.Join(s.PolicyDir(), policy.DefaultName), policy.Default, 0o644)
	_, kf := receipts.GenerateKey()
	receipts.WriteKeyFile(s.KeyPath(), kf)

	g, err := gate.Open(context.Background(), project, gate.Options{Home: "/nonexistent/home"})
	if err != nil {
		fmt.Println("no gate:", err) // nothing can be signed: no call runs
		return
	}

	input, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	d, err := g.Decide(context.Background(), gate.Call{
		SessionID: "session-1", Agent: "claude-code", ToolName: "Bash", ToolUseID: "call-1",
		Requests: []policy.Call{{Agent: "claude", ToolName: "Bash", ToolInput: input, Cwd: project}},
	})
	if err != nil {
		fmt.Println("blocked:", err) // not recorded: the call must not run
		return
	}
	fmt.Println("decision", d.Sequence, d.Decision.Decision, d.Reason)
	if d.Decision.Decision != policy.Allow {
		return
	}
	// ... the call runs ...
	r, err := g.Record(context.Background(), gate.Event{HookEvent: receipts.PostToolUse, SessionID: "session-1", Agent: "claude-code",
		ToolName: "Bash", ToolUseID: "call-1"})
	fmt.Println("execution", r.Sequence, "linked:", !r.Unlinked, err)
	// Output:
	// decision 1 allow cedar_allow
	// execution 2 linked: true <nil>
}
