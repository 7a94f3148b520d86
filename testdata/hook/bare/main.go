// Command bare is the baseline of the hook benchmark: a Go process that
// reads stdin and writes one line, the least any hook can cost.
package main

import (
	"io"
	"os"
)

func main() {
	io.Copy(io.Discard, os.Stdin)
	os.Stdout.WriteString("ok\n")
}
