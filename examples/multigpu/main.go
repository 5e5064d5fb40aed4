// Command multigpu alternates work between CUDA devices and says, as JSON,
// what it did, for bench/multigpu/check.py to compare with cuprof's trace:
// for each round and each device in turn it makes the device current,
// creates a stream, allocates buffers on it, frees them, synchronizes the
// stream and the device, and destroys the stream.
//
//	go run ./examples/multigpu -devices 0,1 -rounds 4 -out multigpu.json
//	cuprof record --sim -o multigpu.cuprof -- go run ./examples/multigpu
//
// The JSON (the schema of examples/python/multigpu_cudacore.py) has the
// process id and, per device, the set-current calls, the allocations
// (pointer, size, stream), the stream handles and the stream and device
// synchronizes. The driver is libcuda.so.1, or the library named by
// CUPROF_LIBCUDA (-sim: cuprof's simulated driver, two devices). The code is
// in internal/seed (multigpu.go).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cuprof/cuprof/internal/seed"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "multigpu:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error { return seed.MultiGPU(args, stdout) }
