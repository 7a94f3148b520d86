package timeline

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSummaryRedacts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tool   string
		input  string
		want   string // must appear
		hidden string // must not appear
	}{
		{name: "command", tool: "Bash", input: `{"command":"git status"}`, want: "git status"},
		{name: "github token", tool: "Bash", input: `{"command":"curl -H 'x' https://x?t=ghp_abcdefghijklmnopqrstuvwxyz0123"}`, want: Redacted, hidden: "ghp_abcdefghijklmnop"},
		{name: "aws key", tool: "Bash", input: `{"command":"export AWS=AKIAABCDEFGHIJKLMNOP"}`, want: Redacted, hidden: "AKIAABCDEFGHIJKLMNOP"},
		{name: "secret assignment", tool: "Bash", input: `{"command":"DB_PASSWORD=hunter2 ./run"}`, want: "DB_PASSWORD=" + Redacted, hidden: "hunter2"},
		{name: "bearer", tool: "Bash", input: `{"command":"curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'"}`, want: "Bearer " + Redacted, hidden: "abcdefghijklmnopqrst"},
		{name: "url credentials", tool: "Bash", input: `{"command":"git clone https://me:s3cretpw@example.com/r"}`, want: "https://" + Redacted + "@example.com", hidden: "s3cretpw"},
		{name: "write to .env", tool: "Bash", input: `{"command":"echo 'plainvalue' >> .env"}`, want: ".env", hidden: "plainvalue"},
		{name: "heredoc to key file", tool: "Bash", input: `{"command":"cat > id_rsa <<EOF\nMIIEvQIBADAN\nEOF"}`, want: "id_rsa", hidden: "MIIEvQ"},
		{name: "private key", tool: "mcp__x__y", input: `{"data":"-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----"}`, want: Redacted, hidden: "MIIEvQ"},
		{name: "write shows the path only", tool: "Write", input: `{"file_path":".env","content":"TOKEN=abc"}`, want: ".env", hidden: "abc"},
		{name: "not json", tool: "x", input: `not json`, want: "not json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summary(tc.tool, json.RawMessage(tc.input))
			if !strings.Contains(got, tc.want) || tc.hidden != "" && strings.Contains(got, tc.hidden) {
				t.Errorf("Summary(%s) = %q, want %q shown and %q hidden", tc.input, got, tc.want, tc.hidden)
			}
		})
	}
}

func TestSecretFile(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".env", true}, {"app/.env.local", true}, {".env.example", false}, {"server.PEM", true},
		{"~/.ssh/id_ed25519", true}, {"main.go", false}, {".netrc", true}, {"keys.txt", false},
	} {
		if got := SecretFile(tc.path); got != tc.want {
			t.Errorf("SecretFile(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func FuzzSummary(f *testing.F) {
	f.Add("Bash", `{"command":"echo 'x' > .env"}`)
	f.Add("Write", `{"file_path":"a","content":"ghp_aaaaaaaaaaaaaaaaaaaaaaaa"}`)
	f.Fuzz(func(t *testing.T, tool, input string) {
		if got := Summary(tool, json.RawMessage(input)); len(got) > maxSummary+len("…") {
			t.Errorf("Summary() is %d bytes, want at most %d", len(got), maxSummary)
		}
	})
}
