package mcp_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
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
	eng, err := gate.LoadPolicy(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, key, _ := ed25519.GenerateKey(nil)
	cfg := mcp.Config{
		Gate:      &gate.Gate{Store: s, Engine: eng, Key: key},
		Server:    "t",
		Command:   []string{"cat"}, // any stdio MCP server
		SessionID: "example",
	}
	code, err := mcp.Run(context.Background(), cfg, os.Stdin, os.Stdout, os.Stderr)
	fmt.Println(code, err)
}
