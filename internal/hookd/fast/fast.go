// Package fast forwards `docket hook pre` to the project's gate daemon
// (package hookd) from its init, before the docket binary initialises
// anything else: Go initialises the packages whose imports are ready in
// the order of their import paths, and this one imports only hookd, os,
// syscall and time, so it runs after about twenty small runtime and
// standard-library packages and before Cedar, the shell parser, net/http,
// SQLite and the other ~120 packages the docket binary links. A hook the
// daemon answered exits here; any other runs on into main as before.
//
// Only cmd/docket imports it.
package fast

import (
	"os"
	"time"

	"github.com/docketlog/docket/internal/hookd"
)

func init() {
	hookd.Fast = true
	if len(os.Args) < 3 || os.Args[1] != "hook" || os.Getenv("DOCKET_HOOKD") == "0" || !hookd.Forwardable(os.Args[2:]) {
		return
	}
	if code, ok := hookd.Forward(os.Args[2:], time.Now()); ok {
		os.Exit(code)
	}
}
