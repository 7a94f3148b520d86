// Package stackgrow grows a goroutine's stack in one step.
//
// A goroutine starts with a small stack that the runtime doubles, copying
// it, each time a call needs more. Parsing a policy and analysing a shell
// command recurse deeply, so a hook process paid several growths of deep
// stacks (newstack and copystack, about 5% of its CPU by perf). Grow grows
// the stack once, while it is shallow and the copy is cheap.
package stackgrow

import "runtime"

// Grow makes the calling goroutine's stack at least 64 KiB.
//
//go:noinline
func Grow() {
	var buf [64 << 10]byte
	runtime.KeepAlive(&buf)
}
