// Command bare is the baseline of the hook benchmark: a Go process that
// reads stdin and writes one line, the least any hook can cost. With a file
// argument it also appends its input to that file durably (flock, write,
// fdatasync), the least a hook that keeps a durable record can cost.
package main

import (
	"io"
	"os"
	"syscall"
)

func main() {
	in, _ := io.ReadAll(os.Stdin)
	if len(os.Args) > 1 {
		f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(1)
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if _, err := f.Write(append(in, '\n')); err != nil {
			os.Exit(1)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			os.Exit(1)
		}
	}
	os.Stdout.WriteString("ok\n")
}
