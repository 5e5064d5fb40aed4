// Command streamcreate compares creating and destroying a CUDA stream
// through a heavy path, the way object-oriented wrappers do it (an options
// object validated per call, a wrapper with a finalizer, a creation stack
// kept for leak reports), against the direct call.
//
//	go run ./examples/streamcreate
//	cuprof record --sim -- go run ./examples/streamcreate
//
// The driver is libcuda.so.1, or the library named by CUPROF_LIBCUDA. The
// code is in internal/seed (streamcreate.go), shared with "cuprof demo".
package main

import (
	"fmt"
	"os"

	"github.com/cuprof/cuprof/internal/seed"
)

func main() {
	if err := seed.StreamCreate(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streamcreate:", err)
		os.Exit(1)
	}
}
