// Package sim holds cuprof's simulated CUDA driver: the C sources of a
// libcuda.so.1 that needs no GPU, and the code that builds it.
//
// The driver exports every symbol of cuprof's API table (cudawrap/shim/cuprof_apis.h:
// every function of the driver's headers), each variant at its own address,
// plus cuGetProcAddress and cuGetProcAddress_v2 answering by version and
// per-thread flag from the headers' version table (CUPROF_PROCS). What
// csrc/sim.c does not simulate is a generated weak stub (csrc/stubs_gen.c)
// that spends its API's cost and answers CUDA_ERROR_NOT_SUPPORTED. It keeps devices,
// contexts, streams, events, allocations and memory pools, returns the
// driver's error codes for bad handles, double frees and wrong devices, and
// spends a configurable cost per call (defaults: an H200's, the H200 column
// of docs/benchmarks.md section 6). A pool holding more freed memory
// than its release threshold gives it back at a synchronize, or when the
// stream the memory was freed on is destroyed (55 us), and the next
// allocation maps memory again (45 us), as traced on an H200. Stream capture
// records launches, copies and sets as graph nodes; graphs instantiate,
// launch (a kernel launch's cost plus 150 ns a node) and update; virtual
// memory reserves, maps and unmaps 2 MiB granules; libraries hand out kernels
// and kernels functions. Those families' costs are estimates (sim.c says what
// each is based on) until they are measured on an H200.
// testdata/simtest.c passes against both this driver and the real one
// (SIMTEST_REAL=1).
//
// Environment read by the built library: CUPROF_SIM_DEVICES (default 2),
// CUPROF_SIM_MEM_BYTES (default 80 GiB), CUPROF_SIM_DRIVER_VERSION (13000),
// CUPROF_SIM_COSTS ("cuCtxSynchronize=900,poolRelease=50000", ns per API base
// name, plus cuGetProcAddress, poolRelease, poolGrow and syncPending) and
// CUPROF_SIM_COST_SCALE (multiplier; 0 turns costs off).
//
// The embedded set is sim.c, sim_families.h and stubs_gen.c (csrc/) and the
// headers they include, cuprof_cuda.h, cuprof_apis.h and cuprof_types.h, taken from package shim so that the shim
// and the simulated driver are always built from the same API table.
package sim

import (
	"embed"
	"io/fs"
	"testing/fstest"

	"github.com/cuprof/cuprof/cudawrap/shim"
)

// Sources holds sim.c and the headers it includes, at the root of the FS.
var Sources fs.FS = sources()

// sim.c lives in csrc/ because Go refuses .c files in a package without cgo.
//
//go:embed csrc/sim.c csrc/sim_families.h csrc/stubs_gen.c
var csrc embed.FS

func sources() fs.FS {
	files := fstest.MapFS{}
	add := func(from fs.FS, path, name string) {
		b, err := fs.ReadFile(from, path)
		if err != nil {
			panic(err) // all are embedded at build time
		}
		files[name] = &fstest.MapFile{Data: b, Mode: 0o600}
	}
	add(csrc, "csrc/sim.c", "sim.c")
	add(csrc, "csrc/sim_families.h", "sim_families.h")
	add(csrc, "csrc/stubs_gen.c", "stubs_gen.c")
	add(shim.Sources, "cuprof_cuda.h", "cuprof_cuda.h")
	add(shim.Sources, "cuprof_apis.h", "cuprof_apis.h")
	add(shim.Sources, "cuprof_types.h", "cuprof_types.h")
	return files
}

// SourceFiles lists the files of Sources; CompiledFiles those compiled.
var SourceFiles = []string{"sim.c", "sim_families.h", "stubs_gen.c", "cuprof_cuda.h", "cuprof_apis.h", "cuprof_types.h"}

// CompiledFiles are the translation units of the library: sim.c and the
// generated weak stubs of every API it does not simulate.
var CompiledFiles = []string{"sim.c", "stubs_gen.c"}

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
