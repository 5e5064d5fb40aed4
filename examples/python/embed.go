// Package pyexamples carries the Python seed of the benchmarks (the wrapper-overhead
// comparison on ctypes: wrappers_ctypes.py with the minicore package) so that
// cuprof demo and the tests can run it from any working directory.
package pyexamples

import "embed"

// Seed holds wrappers_ctypes.py, _percall.py and minicore/*.py, at the paths
// they have in examples/python.
//
//go:embed wrappers_ctypes.py _percall.py minicore/*.py
var Seed embed.FS

// SeedScript is the script of Seed to run.
const SeedScript = "wrappers_ctypes.py"
