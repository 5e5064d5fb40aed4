// Package sim holds cuprof's simulated CUDA driver: the C sources of a
// libcuda.so.1 that needs no GPU, and the code that builds it.
//
// The driver exports every symbol of cuprof's API table (cudawrap/shim/cuprof_apis.h),
// each variant at its own address, plus cuGetProcAddress and cuGetProcAddress_v2
// with the real driver's version table (in csrc/sim.c). It keeps devices,
// contexts, streams, events, allocations and memory pools, returns the
// driver's error codes for bad handles, double frees and wrong devices, and
// spends a configurable cost per call (defaults: the H200 figures of
// shared/reference/h200-measurements.md). A pool holding more freed memory
// than its release threshold gives it back at a synchronize, or when the
// stream the memory was freed on is destroyed (55 us), and the next
// allocation maps memory again (45 us), as traced on an H200.
// testdata/simtest.c passes against both this driver and the real one
// (SIMTEST_REAL=1).
//
// Environment read by the built library: CUPROF_SIM_DEVICES (default 2),
// CUPROF_SIM_MEM_BYTES (default 80 GiB), CUPROF_SIM_DRIVER_VERSION (13000),
// CUPROF_SIM_COSTS ("cuCtxSynchronize=900,poolRelease=50000", ns per API base
// name, plus cuGetProcAddress, poolRelease, poolGrow and syncPending) and
// CUPROF_SIM_COST_SCALE (multiplier; 0 turns costs off).
//
// The embedded set (csrc/) is self-contained: sim.c includes cuprof_cuda.h and
// cuprof_apis.h from its own directory. Those two are copies of the ones in
// cudawrap/shim (go generate refreshes them; a test fails when they differ).
package sim

import (
	"embed"
	"io/fs"
)

//go:generate cp ../shim/cuprof_cuda.h ../shim/cuprof_apis.h csrc/

// Sources holds sim.c and the headers it includes, at the root of the FS.
// (They live in csrc/ because Go refuses .c files in a package without cgo.)
var Sources fs.FS = mustSub(csrc, "csrc")

//go:embed csrc/sim.c csrc/cuprof_cuda.h csrc/cuprof_apis.h
var csrc embed.FS

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// SourceFiles lists the files of Sources; only sim.c is compiled.
var SourceFiles = []string{"sim.c", "cuprof_cuda.h", "cuprof_apis.h"}

// CFlags are the flags sim.c is compiled with, besides its output name.
// -fvisibility=hidden keeps internals out of the dynamic symbol table;
// -fno-ipa-icf keeps identical variants (cuStreamDestroy, cuStreamDestroy_v2)
// at distinct addresses.
var CFlags = []string{
	"-shared", "-fPIC", "-O2", "-std=gnu11", "-pthread",
	"-fvisibility=hidden", "-fno-ipa-icf",
	"-Wall", "-Wno-unused-parameter",
	"-Wl,-soname,libcuda.so.1", "-Wl,--no-undefined",
}

// Soname is the file name of the built library.
const Soname = "libcuda.so.1"
