//go:build !unix

package analysis

func cpuNs() int64 { return 0 }
