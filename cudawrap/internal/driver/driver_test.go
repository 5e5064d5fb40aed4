package driver

import "testing"

// BenchmarkNow is one cgo call that does nothing when not recording: the
// floor under every cudawrap operation.
func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		if Now() != 0 {
			b.Fatal("recording in a benchmark")
		}
	}
}

func TestOpenMissingLibrary(t *testing.T) {
	err := Open(t.TempDir() + "/libcuda.so.1")
	if err == nil {
		t.Fatal("opened a missing library")
	}
}
