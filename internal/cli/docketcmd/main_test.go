package docketcmd

import (
	"bytes"
	"strings"
	"testing"
)

// runDocket runs the docket command line in this process.
func runDocket(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code = Run(t.Context(), args, strings.NewReader(stdin), &out, &errw)
	return code, out.String(), errw.String()
}

func TestRun(t *testing.T) {
	if code, out, _ := runDocket(t, "", "help"); code != 0 || !strings.Contains(out, "Commands:") {
		t.Errorf("docket help = %d, %q; want 0 and the usage on stdout", code, out)
	}
	if code, _, errs := runDocket(t, "", "nope"); code != 2 || !strings.Contains(errs, `unknown command "nope"`) {
		t.Errorf("docket nope = %d, %q; want 2 and an error on stderr", code, errs)
	}
	// The pre hook fails closed in process too: empty input blocks.
	t.Setenv("CLAUDE_PROJECT_DIR", t.TempDir())
	if code, out, errs := runDocket(t, "", "hook", "pre"); code != 2 || out != "" || !strings.Contains(errs, "empty hook input") {
		t.Errorf("docket hook pre < empty = %d, %q, %q; want 2, no output, the reason on stderr", code, out, errs)
	}
}
