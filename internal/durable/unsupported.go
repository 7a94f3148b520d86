//go:build !unix

package durable

// Docket needs flock(2) and POSIX rename semantics: it builds on Linux,
// macOS and the other unix systems only. This declaration makes the build
// fail on any other system with a message that says so.
var _ = Docket_builds_only_on_unix_systems_such_as_Linux_and_macOS
