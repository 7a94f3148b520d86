//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// Lock takes an exclusive flock(2) on f, waiting for it. The lock is
// released when f is closed (or the process ends).
func Lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// RLock takes a shared flock(2) on f, waiting for it.
func RLock(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// Unlock releases the flock(2) f holds, keeping f open: for a file held
// open between locked sections.
func Unlock(f *os.File) error { return flock(f, syscall.LOCK_UN) }

// TryLock takes an exclusive flock(2) on f if no other open file holds a
// lock on it. It reports whether it took the lock.
func TryLock(f *os.File) (bool, error) { return tryLock(f, syscall.LOCK_EX) }

// TryRLock takes a shared flock(2) on f unless another open file holds the
// exclusive lock. It reports whether it took the lock.
func TryRLock(f *os.File) (bool, error) { return tryLock(f, syscall.LOCK_SH) }

func tryLock(f *os.File, how int) (bool, error) {
	err := flock(f, how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}
