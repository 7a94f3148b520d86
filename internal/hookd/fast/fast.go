// Package fast forwards `docket hook pre` to the project's gate daemon
// (package hookd) from its init, before the docket binary initialises
// anything else: Go initialises the packages whose imports are ready in
// the order of their import paths, and this one imports only hookd and
// syscall, so it runs right after syscall, before time, os and every
// package outside the standard library's first few: Cedar, the shell
// parser, TOML (whose init reads the local time zone), net/http, SQLite
// and the other ~130 packages the docket binary links. A hook the daemon
// answered exits here; any other runs on into main as before.
//
// Only cmd/docket imports it.
package fast

import (
	"syscall"

	"github.com/docketlog/docket/internal/hookd"
)

func init() {
	hookd.Fast = true
	var tv syscall.Timeval
	_ = syscall.Gettimeofday(&tv)
	start := tv.Nano()
	if v, _ := syscall.Getenv("DOCKET_HOOKD"); v == "0" {
		return
	}
	args := cmdline()
	if len(args) < 3 || args[1] != "hook" || !hookd.Forwardable(args[2:]) {
		return
	}
	if code, ok := hookd.Forward(args[2:], start); ok {
		syscall.Exit(code)
	}
}

// cmdline returns the process's arguments. Package os, which holds them
// as os.Args, is not initialised yet.
func cmdline() []string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n == len(buf) {
		return nil // longer than any forwardable command line
	}
	var args []string
	for start, i := 0, 0; i < n; i++ {
		if buf[i] == 0 {
			args = append(args, string(buf[start:i]))
			start = i + 1
		}
	}
	return args
}
