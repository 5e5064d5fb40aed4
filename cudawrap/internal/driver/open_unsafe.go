package driver

/*
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import "unsafe"

// open dlopens path; it returns the loader's message on failure, else "".
func open(path string) string {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var msg C.cw_name
	if C.cw_open(cpath, &msg) != 0 {
		return C.GoString(&msg.s[0])
	}
	return ""
}

// Intern returns the recording's id for s (0 when not recording).
func Intern(s string) uint32 {
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return uint32(C.cw_intern(cs))
}
