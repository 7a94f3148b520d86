//go:build !unix

package audit

// mapped returns an empty slice of capacity n of T on the Go heap (see
// mapped_unix.go).
func mapped[T any](n int) (s []T, release func()) {
	return make([]T, 0, n), func() {}
}
