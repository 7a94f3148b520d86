package mcp_test

import (
	"context"

	"fmt"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Run a stdio MCP server behind the gate of a project: the client's
// messages come from stdin, the server's answers go to stdout.
func ExampleRun() {
	project, _ := os.MkdirTemp("", "docket-example")
	defer os.RemoveAll(project)
	s := store.Open(project)
	os.MkdirAll(s.PolicyDir(), 0o700)
	// Trust the server "t" in the default policy, as docket init -mcp t does.
	src, _, _ := mcp.TrustServer(policy.Default, "t")
	os.WriteFile(filepath.Join(s.PolicyDir(), "docket.cedar"), src, 0o600)
	_, kf := receipts.GenerateKey()
	receipts.WriteKeyFile(s.KeyPath(), kf)
	g, err := gate.Open(context.Background(), project, gate.Options{Caller: "MCP relay"})
	if err != nil {
		fmt.Println(err) // no issuer key: nothing could be signed
		return
	}
	cfg := mcp.Config{
		Gate:      g,
		Server:    "t",
		Command:   []string{"cat"}, // any stdio MCP server
		SessionID: "example",
	}
	code, err := mcp.Run(context.Background(), cfg, os.Stdin, os.Stdout, os.Stderr)
	fmt.Println(code, err)
}
