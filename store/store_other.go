//go:build !linux

package store

import "os"

// datasync flushes a file to stable storage.
func datasync(f *os.File) error { return f.Sync() }
