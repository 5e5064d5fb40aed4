//go:build !unix

package perfetto

func cpuNs() int64 { return 0 }
