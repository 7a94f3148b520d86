//go:build unix

package audit

import (
	"syscall"
	"unsafe"
)

// mapped returns an empty slice of capacity n of T, a type that holds no
// pointers, whose array is memory the OS maps outside the Go heap: the
// garbage collector neither scans it nor counts it towards its next
// collection, so a ledger's records cost their size and no collection
// headroom, and the pages of its capacity not yet written cost nothing.
// release unmaps it: the slice must not be used after. Appending past n
// moves the slice to the Go heap, as appending does. Where the OS refuses
// the mapping, the slice is made on the Go heap.
func mapped[T any](n int) (s []T, release func()) {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size == 0 {
		return nil, func() {}
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]T, 0, n), func() {}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)[:0], func() { syscall.Munmap(b) }
}
