//go:build !linux

package logtest

import "testing"

// SmallDisk would mount a small file system; it is Linux only, and skips
// the test elsewhere.
func SmallDisk(t testing.TB, size int64) string {
	t.Skip("a small file system for a full disk is mounted on Linux only")
	return ""
}
