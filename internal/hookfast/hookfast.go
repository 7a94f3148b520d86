package hookfast

import (
	"os"
	"syscall"
)

func init() {
	if len(os.Args) == 3 && os.Args[1] == "hook" && os.Args[2] == "fastproto" {
		var buf [65536]byte
		syscall.Read(0, buf[:])
		syscall.Write(1, []byte("ok\n"))
		syscall.Exit(0)
	}
}
