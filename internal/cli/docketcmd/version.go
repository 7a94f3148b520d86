package docketcmd

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints the module version and the VCS revision the binary
// was built from, as the build info records them.
func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket version", "Usage:\n    docket version\n\nPrints the module version and the VCS revision docket was built from.\n", stderr)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	fmt.Fprintln(stdout, versionString())
	return 0
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "docket (no build information)"
	}
	v := "docket " + bi.Main.Version
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		v += " revision " + rev + dirty
		if at != "" {
			v += " of " + at
		}
	}
	return v + " " + bi.GoVersion
}
