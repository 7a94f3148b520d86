package docketcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
)

const versionUsage = `Usage:
    docket version [-json]

Prints the module version and the VCS revision docket was built from, as
the build info records them. With -json, one object: {"path", "version",
"revision", "time", "modified", "go"}.
`

// buildVersion is what the build info says about this binary.
type buildVersion struct {
	Path     string `json:"path"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// runVersion prints the module version and the VCS revision the binary
// was built from.
func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket version", versionUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	bv, ok := readBuildVersion()
	switch {
	case !ok:
		errorf(stderr, "version: this binary has no build information")
		return 1
	case *asJSON:
		b, _ := json.Marshal(bv)
		fmt.Fprintf(stdout, "%s\n", b)
	default:
		fmt.Fprintln(stdout, bv)
	}
	return 0
}

func readBuildVersion() (buildVersion, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{}, false
	}
	bv := buildVersion{Path: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			bv.Revision = s.Value
		case "vcs.time":
			bv.Time = s.Value
		case "vcs.modified":
			bv.Modified = s.Value == "true"
		}
	}
	return bv, true
}

func (bv buildVersion) String() string {
	v := "docket " + bv.Version
	if bv.Revision != "" {
		v += " revision " + bv.Revision
		if bv.Modified {
			v += " (modified)"
		}
		if bv.Time != "" {
			v += " of " + bv.Time
		}
	}
	return v + " " + bv.Go
}
