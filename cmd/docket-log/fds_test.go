package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileLimit: connections must leave the storage its file descriptors.
// Tessera's POSIX driver panics when it cannot open its lock file, which
// once ended docket-log under 2,000 clients; so a -max-conns the limit on
// open files cannot hold is refused at start, and the default is lowered
// to fit.
func TestFileLimit(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantErr  string // empty: it starts
		wantWarn string
	}{
		{name: "max-conns over the limit", args: []string{"-max-conns", "1024"},
			wantErr: "docket-log: error: -max-conns 1024 needs 1537 file descriptors with the storage's, and the limit is 600: raise it (LimitNOFILE in the unit, ulimit -n) or lower -max-conns to 275"},
		{name: "max-conns that fits", args: []string{"-max-conns", "275"}},
		{name: "default lowered", wantWarn: "-max-conns lowered to fit the limit on open files\" max_conns=275 limit=600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddr(t)
			args := append([]string{"-c", `ulimit -n 600 && exec "$0" "$@"`, logBin,
				"-storage-dir", filepath.Join(t.TempDir(), "log"), "-listen", addr}, tt.args...)
			if tt.wantErr != "" {
				out, err := exec.Command("sh", args...).CombinedOutput()
				if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(string(out), tt.wantErr) {
					t.Fatalf("docket-log %v = %v\n%s\nwant exit 1 with %q", tt.args, err, out, tt.wantErr)
				}
				return
			}
			p := start(t, "sh", addr, "/checkpoint", args...)
			if err := p.stop(); err != nil {
				t.Errorf("docket-log %v: stop = %v\n%s", tt.args, err, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), tt.wantWarn) {
				t.Errorf("docket-log %v: stderr\n%s\nwant %q", tt.args, p.stderr.String(), tt.wantWarn)
			}
		})
	}
}
