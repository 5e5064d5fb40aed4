package output

import "unsafe"

// aligned reports whether p starts at a multiple of n (a power of two) in
// memory, as a direct write's buffer must.
func aligned(p []byte, n uintptr) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(p)))&(n-1) == 0
}
