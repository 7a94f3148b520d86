package logtest

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// SmallDisk mounts a new file system of size bytes (a tmpfs) on a new
// directory and returns the directory; it is unmounted when the test and
// its cleanups registered later are done. The test is skipped where
// mounting is not allowed (it needs root, or CAP_SYS_ADMIN).
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("a small file system for a full disk needs root to mount a tmpfs")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mounting a tmpfs of %d bytes for a full disk: %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting the small file system: %v", err)
		}
	})
	return dir
}
