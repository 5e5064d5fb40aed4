package trace

import "syscall"

// cpuNanos is the process's user+system CPU time: benchmarks report it
// beside wall time because the build machine is shared.
func cpuNanos() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
