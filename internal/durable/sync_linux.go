package durable

import (
	"os"
	"syscall"
)

// Datasync flushes a file's data and the metadata needed to read it back
// (its size), not its timestamps: an append's durability point.
func Datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
