package record

import (
	"os"
	"strings"
)

// testCC is the C compiler the tests build their programs with: $CC's
// first word (a cross compiler, when the tests run under emulation: the
// programs must be of the shim's architecture), else cc.
func testCC() string {
	if f := strings.Fields(os.Getenv("CC")); len(f) > 0 {
		return f[0]
	}
	return "cc"
}

// plausibleNs is a bound on a measured cost that a native run stays under:
// under emulation (CUPROF_TEST_EMULATED=1, qemu-user running another
// architecture's code tens of times slower) it is a hundred times as much.
func plausibleNs(native float64) float64 {
	if os.Getenv("CUPROF_TEST_EMULATED") == "1" {
		return native * 100
	}
	return native
}
