package mcp

// SetServerMaxLine sets the length over which server messages are spooled
// to disk, for a test, and returns a function that restores it.
func SetServerMaxLine(n int) (restore func()) {
	old := serverMaxLine
	serverMaxLine = n
	return func() { serverMaxLine = old }
}
