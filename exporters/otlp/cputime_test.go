package otlp

import "syscall"

// cpuNs returns the CPU time the process has used (user and system, all
// threads), so benchmarks on a loaded machine report what the work cost
// rather than how long it waited.
func cpuNs() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
