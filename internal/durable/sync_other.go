//go:build !linux

package durable

import "os"

// Datasync flushes a file to stable storage.
func Datasync(f *os.File) error { return f.Sync() }
