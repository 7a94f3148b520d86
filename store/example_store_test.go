package store_test

import (
	"fmt"
	"os"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Appending signed receipts to a session chain and reading them back.
func ExampleStore_Append() {
	dir, _ := os.MkdirTemp("", "docket-example-")
	defer os.RemoveAll(dir)
	s := store.Open(dir)
	key, _ := receipts.GenerateKey()
	for _, decision := range []string{receipts.Allow, receipts.Deny} {
		head, err := s.Append("session-1", store.AppendOptions{}, func(l store.Link) ([]byte, error) {
			return receipts.Sign(key, receipts.Payload{
				Type: receipts.TypeDecision, SessionID: "session-1", Sequence: l.Sequence,
				PreviousReceiptHash: l.Previous, HookEvent: "PreToolUse", ToolName: "Bash", Decision: decision,
			})
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("appended", head.Sequence)
	}
	sessions, _ := s.Sessions()
	chain, _ := s.Receipts(sessions[0])
	fmt.Println(sessions, len(chain))
	// Output:
	// appended 1
	// appended 2
	// [session-1] 2
}
