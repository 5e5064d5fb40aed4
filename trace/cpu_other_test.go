//go:build !linux

package trace

func cpuNanos() int64 { return 0 }
