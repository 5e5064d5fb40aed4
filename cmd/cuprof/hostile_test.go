package main

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// heapAllocated returns the bytes f allocated on the heap: an upper bound
// of the memory it took.
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestViewRefusesGzipBomb gives view a gzip bomb: 256 MiB of zeros in a
// file of a few hundred KB. view stops decompressing at maxProfileBytes and
// says why, instead of handing pprof the whole thing.
func TestViewRefusesGzipBomb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 256 {
		if _, err := zw.Write(zero); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var runErr error
	var stderr string
	n := heapAllocated(func() {
		_, stderr, runErr = runFlameCLI("view", "--no-browser", path)
	})
	if runErr == nil || !strings.Contains(runErr.Error(), "decompresses to more than 32 MiB") {
		t.Fatalf("view of a gzip bomb: %v\n%s; want a refusal naming the limit", runErr, stderr)
	}
	if limit := uint64(3 * maxProfileBytes); n > limit {
		t.Fatalf("view of a gzip bomb allocated %d bytes; want under %d", n, limit)
	}
}

// TestReportRefusesZeroDevice runs report on /dev/zero and on a large file
// of zeros: refused at the first bytes, with the wording of every command.
func TestReportRefusesZeroDevice(t *testing.T) {
	zeros := filepath.Join(t.TempDir(), "zeros")
	f, err := os.Create(zeros)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(300 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, path := range []string{"/dev/zero", zeros} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		for _, cmd := range []string{"report", "lint", "flame", "dump", "timeline", "export", "view"} {
			args := []string{cmd, path}
			switch cmd {
			case "flame", "timeline":
				args = append(args, "-o", filepath.Join(t.TempDir(), "out"))
			case "export":
				args = append(args, "--otlp=127.0.0.1:1")
			case "view":
				args = append(args, "--no-browser")
			}
			var runErr error
			n := heapAllocated(func() { _, _, runErr = runFlameCLI(args...) })
			if runErr == nil || !strings.Contains(runErr.Error(), "not a cuprof trace: the input starts with zero bytes") {
				t.Fatalf("%s %s: %v; want it refused as not a trace", cmd, path, runErr)
			}
			if n > 8<<20 {
				t.Fatalf("%s %s allocated %d bytes before refusing; want under 8 MiB", cmd, path, n)
			}
		}
	}
}
