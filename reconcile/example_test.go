package reconcile_test

import (
	"context"
	"fmt"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/reconcile"
)

// Read a Codex rollout (recorded from a run in an untrusted project, where
// no hook ran) and match its calls with a chain that decided only the
// first: the second is what an unmediated_call receipt would report.
func ExampleMatch() {
	rec, err := reconcile.Read(context.Background(), reconcile.Codex,
		"testdata/codex/rollout-2026-11-26T12-49-55-01a217e7-c625-7b60-ab63-65961e5bf99e.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	chain := []receipts.Payload{{HookEvent: receipts.PreToolUse, ToolName: "Bash", ToolUseID: "call_01", Decision: receipts.Allow}}
	for _, c := range reconcile.Match(rec.Calls, chain) {
		fmt.Println(c.Tool, c.ID, c.Position, c.Ran)
	}
	// Output:
	// exec_command call_02 rollout-2026-11-26T12-49-55-01a217e7-c625-7b60-ab63-65961e5bf99e.jsonl:15 true
}
