package hook

import (
	"os/exec"
	"testing"
)

// TestConfinedCommand: the rewritten command names the digest and
// mechanism the post hook reads back, and carries the original command
// through the shell byte for byte, whatever quotes it holds.
func TestConfinedCommand(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tt := range []struct{ name, cmd string }{
		{"plain", "go test ./..."},
		{"single quotes", `echo 'a b' "c'd"`},
		{"newlines and dollars", "echo $HOME\n`id`; exit 3"},
		{"wrapper lookalike", `__docket_cwd="$(mktemp)" && { 'x' exec -confine 'y' -digest 'sha256:00' -mechanism 'none' `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, carry := range []bool{true, false} {
				got := confinedCommand("/opt/doc'ket", "/p/.docket/confinement/x.json", digest, "landlock", tt.cmd, carry)
				m := wrapperRE().FindStringSubmatch(got)
				if m == nil || m[1] != digest || m[2] != "landlock" {
					t.Fatalf("wrapperRE on %q = %q, want the digest and landlock", got, m)
				}
				if sm := shellRE().FindStringSubmatch(got); sm == nil || shellUnquote(sm[1]) != tt.cmd {
					t.Errorf("the original read back from %q = %q, want %q", got, sm, tt.cmd)
				}
			}
			out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(tt.cmd)).Output()
			if err != nil || string(out) != tt.cmd {
				t.Errorf("sh printf %s = %q (%v), want %q", shellQuote(tt.cmd), out, err, tt.cmd)
			}
		})
	}
	if wrapperRE().MatchString(`echo __docket_cwd="$(mktemp)" && { 'x' exec -confine 'y' -digest 'sha256:` + digest[7:] + `' -mechanism 'landlock' `) {
		t.Errorf("wrapperRE matches a command that only contains the wrapper")
	}
}
