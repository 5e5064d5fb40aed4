// Command tempbuffer reproduces a temporary-allocation overhead on the CUDA
// driver: the way cuda.cccl's TemporaryStorageBuffer allocated (set the
// device current, create a stream, allocate on it, free, destroy the stream,
// on every call) against a direct stream-ordered allocation on a long-lived
// stream, each with the default pool's release threshold at 0 and at its
// maximum, with and without a synchronize after the free.
//
// With threshold 0 every synchronize hands the freed pool memory back to the
// system (about 100 us on an H200); at the maximum it stays in the pool.
//
//	go run ./examples/tempbuffer                 # the real driver
//	cuprof record --sim -- go run ./examples/tempbuffer   # recorded, simulated
//
// The driver is libcuda.so.1, or the library named by CUPROF_LIBCUDA. The
// code is in internal/seed (tempbuffer.go), shared with "cuprof demo".
package main

import (
	"fmt"
	"os"

	"github.com/cuprof/cuprof/internal/seed"
)

func main() {
	if err := seed.TempBuffer(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tempbuffer:", err)
		os.Exit(1)
	}
}
