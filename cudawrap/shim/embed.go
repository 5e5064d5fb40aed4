// Package shim holds the C sources of cuprof's interposer (libcuprof.so):
// the LD_PRELOAD shim that records CUDA driver calls and NVTX ranges into a
// memory-mapped ring per process. internal/cbuild compiles them on first use.
package shim

import "embed"

// Sources are the shim's headers and version script at the root and its C
// files under csrc/ (Go refuses .c files beside a package built without cgo).
//
//go:embed *.h shim.map csrc/*.c
var Sources embed.FS

// CFiles are the translation units to compile, relative to Sources.
var CFiles = []string{"csrc/ring.c", "csrc/interpose.c", "csrc/nvtx.c", "csrc/python.c", "csrc/py_stack.c",
	"csrc/py_monitoring.c", "csrc/py_evalframe.c", "csrc/py_profile.c", "csrc/capture.c", "csrc/unknown.c", "csrc/passthrough.c", "csrc/inplace.c"}

// CFlags are the flags the shim is built with (besides -I for its directory).
var CFlags = []string{"-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden", "-fno-strict-aliasing",
	"-Wall", "-Wextra", "-Wno-unused-parameter", "-Wl,--version-script=shim.map", "-Wl,-z,now"}

// LDLibs are the libraries the shim links against.
var LDLibs = []string{"-ldl", "-lpthread"}
