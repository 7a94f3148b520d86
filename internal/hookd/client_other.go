//go:build !linux

package hookd

import (
	"errors"
)

// Supported reports whether hooks can be forwarded on this system: only
// Linux (SO_PEERCRED, /proc/self/exe); elsewhere every hook decides in its
// own process.
const Supported = false

var errUnsupported = errors.New("hook forwarding is only built on Linux")

// ExeID is not available here.
func ExeID() ([5]int64, error) { return [5]int64{}, errUnsupported }

// PeerUID is not available here.
func PeerUID(fd int) (int, error) { return -1, errUnsupported }

// Forward never forwards here: the hook decides in its own process.
func Forward(args []string, start int64) (code int, ok bool) { return 0, false }
