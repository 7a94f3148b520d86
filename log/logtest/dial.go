package logtest

import (
	"net"
	"testing"
	"time"
)

// Dial connects to addr for a test that speaks HTTP by hand, and closes the
// connection when the test ends. Reads and writes fail after a minute: a
// guard against a hanging test, not an assertion about time.
func Dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(time.Minute))
	return c
}
