//go:build unix

package logcmd

import "syscall"

// fdLimit returns the soft limit on open files (Go raises it to the hard
// limit at start), or 0 if it cannot be read.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == ^uint64(0) { // RLIM_INFINITY
		return 0
	}
	return r.Cur
}
