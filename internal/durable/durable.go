// Package durable writes files so that a crash leaves the old content or the
// new, never a torn file, and locks files across processes.
//
// Docket runs on Linux and macOS (any unix with flock(2)); on other systems
// the package does not build, and neither do the commands that import it.
package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, durably: it writes a temporary file in
// the same directory (created if missing, mode 0700), fsyncs it, gives it
// mode perm, renames it over path and fsyncs the directory. A crash leaves
// the old file or the new one, never a torn one.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly after the rename
	if err := write(f, data, perm); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// Create writes data to a new file at path, which must not exist, and makes
// it durable: the file is fsynced, then its directory. On failure nothing is
// left at path. It does not create the directory.
func Create(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := write(f, data, perm); err != nil {
		os.Remove(path)
		return err
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// write writes data to f, sets its mode, fsyncs and closes it.
func write(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// SyncDir fsyncs a directory, making the entries created in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
