package main

import (
	"bytes"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/receipts"
)

const demoUsage = `Usage:
    docket demo

Runs Docket on its embedded defaults in a temporary directory and says what
each step proves: a throwaway issuer key signs a short session chain, the chain
verifies offline, and a single changed byte is caught.
`

func runDemo(args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, demoUsage) }
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	dir, err := os.MkdirTemp("", "docket-demo-")
	if err != nil {
		errorf("demo: %v", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := demo(os.Stdout, dir); err != nil {
		errorf("demo: %v", err)
		return 1
	}
	return 0
}

func demo(w io.Writer, dir string) error {
	step := func(format string, args ...any) { fmt.Fprintf(w, "\n== "+format+"\n", args...) }

	key, kf := receipts.GenerateKey()
	keyPath := filepath.Join(dir, "issuer.key")
	if err := receipts.WriteKeyFile(keyPath, kf); err != nil {
		return err
	}
	step("1. A throwaway issuer key: %s (mode 0600, %s)", kf.KID, keyPath)

	chain, err := demoChain(key)
	if err != nil {
		return err
	}
	chainPath := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(chainPath, bytes.Join(chain, []byte("\n")), 0o644); err != nil {
		return err
	}
	step("2. A session chain of %d signed receipts (JCS, Ed25519, hash-chained):", len(chain))
	for i, r := range chain {
		p, _ := receipts.ParseObject(r)
		pl := p["payload"].(map[string]any)
		field := func(k string) any {
			if v, ok := pl[k]; ok {
				return v
			}
			return "-"
		}
		fmt.Fprintf(w, "   %d  %-13v %-5v %-6v %v\n", i+1, field("hook_event"), field("tool_name"), field("decision"), receipts.ChainHash(r)[:23]+"…")
	}

	step("3. docket verify -key-file issuer.key session.jsonl")
	opts := receipts.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey))}
	if code := report(w, []fileResult{verifyFile(chainPath, opts)}, false, false); code != 0 {
		return fmt.Errorf("the demo chain did not verify (exit %d)", code)
	}

	tampered := bytes.Replace(chain[3], []byte(`"deny"`), []byte(`"allo"`), 1)
	tamperedChain := append(append(append([][]byte{}, chain[:3]...), tampered), chain[4:]...)
	tamperedPath := filepath.Join(dir, "tampered.jsonl")
	if err := os.WriteFile(tamperedPath, bytes.Join(tamperedChain, []byte("\n")), 0o644); err != nil {
		return err
	}
	step("4. The operator rewrites the deny in receipt 4; verification catches it:")
	if code := report(w, []fileResult{verifyFile(tamperedPath, opts)}, false, false); code != 1 {
		return fmt.Errorf("tampering went unnoticed (exit %d)", code)
	}

	dropped := append(append([][]byte{}, chain[:3]...), chain[4:]...)
	droppedPath := filepath.Join(dir, "dropped.jsonl")
	if err := os.WriteFile(droppedPath, bytes.Join(dropped, []byte("\n")), 0o644); err != nil {
		return err
	}
	step("5. The operator drops receipt 4 instead; the chain breaks:")
	if code := report(w, []fileResult{verifyFile(droppedPath, opts)}, false, false); code != 1 {
		return fmt.Errorf("a dropped receipt went unnoticed (exit %d)", code)
	}
	fmt.Fprintln(w, "\nEvery step above ran for real; nothing in this demo is canned output.")
	return nil
}

// demoChain signs the receipts of a short session: start, an allowed Bash
// call and its execution, a denied call, end.
func demoChain(priv ed25519.PrivateKey) ([][]byte, error) {
	inputHash := func(v any) string { h, _ := receipts.HashJSON(v); return h }
	latency := int64(1)
	steps := []receipts.Payload{
		{Type: receipts.TypeLifecycle, HookEvent: "SessionStart", LifecycleEvent: "session_start"},
		{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: inputHash(map[string]any{"command": "git status"}),
			Decision: receipts.Allow, Reason: "cedar_allow", PolicyIDs: []string{"allow-git-read"}, HookLatencyMs: &latency},
		{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: inputHash(map[string]any{"command": "rm -rf /"}),
			Decision: receipts.Deny, Reason: "cedar_deny", PolicyIDs: []string{"forbid-rm-outside-project"}, HookLatencyMs: &latency},
		{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end"},
	}
	var chain [][]byte
	prev, allowHash := "", ""
	for i, p := range steps {
		p.SessionID, p.Agent, p.Sequence, p.PreviousReceiptHash = "demo-session", "claude-code", int64(len(chain)+1), prev
		r, err := receipts.Sign(priv, p)
		if err != nil {
			return nil, err
		}
		chain, prev = append(chain, r), receipts.ChainHash(r)
		if i == 1 { // the allowed call runs: its execution receipt follows
			allowHash = prev
			exec := p
			exec.HookEvent, exec.Reason, exec.PolicyIDs, exec.HookLatencyMs = "PostToolUse", "", nil, nil
			exec.ToolOutputHash, exec.DecisionReceiptHash = inputHash(map[string]any{"stdout": "nothing to commit"}), allowHash
			exec.Sequence, exec.PreviousReceiptHash = int64(len(chain)+1), prev
			r, err := receipts.Sign(priv, exec)
			if err != nil {
				return nil, err
			}
			chain, prev = append(chain, r), receipts.ChainHash(r)
		}
	}
	return chain, nil
}
