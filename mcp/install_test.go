package mcp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docketlog/docket/mcp"
	"github.com/docketlog/docket/policy"
)

func TestTrustServer(t *testing.T) {
	out, changed, err := mcp.TrustServer(policy.Default, "fs")
	if err != nil || !changed || !strings.Contains(string(out), `unless { action in [Action::"mcp__ide", Action::"mcp__fs"]`) {
		t.Fatalf("TrustServer(default, fs) = %v, %v; want mcp__fs added to the trusted list", changed, err)
	}
	if again, changed, err := mcp.TrustServer(out, "fs"); err != nil || changed || string(again) != string(out) {
		t.Fatalf("TrustServer twice = %v, %v; want no change", changed, err)
	}
	if _, _, err := mcp.TrustServer([]byte(`permit (principal, action, resource);`), "fs"); err == nil {
		t.Fatalf("TrustServer(policy without the rule) succeeded")
	}
	if _, _, err := mcp.TrustServer(policy.Default, `x"]; permit`); err == nil {
		t.Fatalf("TrustServer(bad name) succeeded")
	}
	if _, err := policy.LoadDefault(); err != nil {
		t.Fatal(err)
	}
}

func TestInstallClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".mcp.json")
	orig := `{"keep":true,"mcpServers":{"fs":{"command":"npx","args":["-y","srv","."],"env":{"A":"1"},"x-extra":7},"web":{"type":"http","url":"https://x"}}}`
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := mcp.InstallClient(path, "fs", "/bin/docket", []string{"-dir", "/p"}, nil)
	if err != nil || !changed {
		t.Fatalf("InstallClient = %v, %v", changed, err)
	}
	var doc map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	fs := doc["mcpServers"].(map[string]any)["fs"].(map[string]any)
	args, _ := json.Marshal(fs["args"])
	if doc["keep"] != true || fs["command"] != "/bin/docket" || string(args) != `["mcp","-name","fs","-dir","/p","--","npx","-y","srv","."]` ||
		fs["env"].(map[string]any)["A"] != "1" || fs["x-extra"] != 7.0 || doc["mcpServers"].(map[string]any)["web"] == nil {
		t.Fatalf("rewritten config = %s", data)
	}
	if bak, _ := os.ReadFile(path + ".bak"); string(bak) != orig {
		t.Fatalf(".bak = %q, want the original", bak)
	}
	if changed, err := mcp.InstallClient(path, "fs", "/bin/docket", nil, nil); err != nil || changed {
		t.Fatalf("InstallClient on a gated entry = %v, %v; want no change", changed, err)
	}
	if _, err := mcp.InstallClient(path, "web", "/bin/docket", nil, nil); err == nil {
		t.Fatalf("InstallClient(http server) succeeded")
	}
	if _, err := mcp.InstallClient(path, "new", "/bin/docket", nil, nil); err == nil {
		t.Fatalf("InstallClient(unknown server, no command) succeeded")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o644)
	if _, err := mcp.InstallClient(bad, "fs", "/bin/docket", nil, []string{"x"}); err == nil {
		t.Fatalf("InstallClient(invalid file) succeeded")
	}
	if data, _ := os.ReadFile(bad); string(data) != "{not json" {
		t.Fatalf("an invalid config was rewritten: %q", data)
	}
}
