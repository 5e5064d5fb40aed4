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

// heapProfileEnv names a file to write a pprof heap profile to as the run
// ends (what is still held then, and what was allocated in all), the same
// way: for finding what a reader keeps as a trace grows.
const heapProfileEnv = "CUPROF_HEAPPROFILE"

// startCPUProfile starts the profile that cpuProfileEnv asks for and returns
// the function that stops it and closes the file (a no-op when none is
// asked for). A profile that cannot start is said on stderr and the command
// runs without it.
func startCPUProfile(stderr io.Writer) func() {
	stopHeap := startHeapProfile(stderr)
	f := createProfile(stderr, cpuProfileEnv)
	if f == nil {
		return stopHeap
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "cuprof: %s: %v\n", cpuProfileEnv, err)
		return stopHeap
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "cuprof: %s: %v\n", cpuProfileEnv, err)
		}
		stopHeap()
	}
}

// startHeapProfile returns the function that writes the heap profile
// heapProfileEnv asks for (a no-op when none is asked for).
func startHeapProfile(stderr io.Writer) func() {
	f := createProfile(stderr, heapProfileEnv)
	if f == nil {
		return func() {}
	}
	return func() {
		err := pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: %s: %v\n", heapProfileEnv, err)
		}
	}
}

// createProfile creates the file the environment variable env names, new,
// private and not through a link; nil when none is named or it cannot be
// created (said on stderr: the command runs without it).
func createProfile(stderr io.Writer, env string) *os.File {
	path := os.Getenv(env)
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "cuprof: %s: %v (name a file that does not exist yet)\n", env, err)
		return nil
	}
	return f
}
