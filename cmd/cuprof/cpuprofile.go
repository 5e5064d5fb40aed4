package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"syscall"
)

// cpuProfileEnv names a file to write a pprof CPU profile of the whole run
// to, for the benchmarks (bench/memory/run.sh): it is not a flag, so that no
// command's help carries it. The file is created new, private and not
// through a link.
const cpuProfileEnv = "CUPROF_CPUPROFILE"

// startCPUProfile starts the profile that cpuProfileEnv asks for and returns
// the function that stops it and closes the file (a no-op when none is
// asked for). A profile that cannot start is said on stderr and the command
// runs without it.
func startCPUProfile(stderr io.Writer) func() {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "cuprof: %s: %v (name a file that does not exist yet)\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "cuprof: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "cuprof: %s: %v\n", cpuProfileEnv, err)
		}
	}
}
