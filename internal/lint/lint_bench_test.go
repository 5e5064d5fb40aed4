package lint

import (
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
)

func BenchmarkRun(b *testing.B) {
	tr := tracetest.LoopTrace(20000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Run(tr)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
}

func TestLoopTraceFindings(t *testing.T) {
	fs := Run(tracetest.LoopTrace(200))
	got := map[string]int{}
	for _, f := range fs {
		got[f.Rule]++
	}
	// a stream per call on each of two threads; the synchronizes are not idle
	if got["stream-churn"] != 1 || got["sync-idle"] != 0 || got["pool-trim"] != 0 {
		t.Errorf("findings %v", got)
	}
}

// BenchmarkStream lints a synthetic trace of every pattern (mixEvents) made
// as it is read, as cuprof lint reads a file: the time per event over
// lint's passes (three: the mix trims a pool), and the heap held at the end of a pass per
// event (what grows with the trace; it should not).
func BenchmarkStream(b *testing.B) {
	const n = 1_000_000
	var heap uint64
	for b.Loop() {
		heap, _ = lintHeap(n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/event")
	b.ReportMetric(float64(heap)/n, "heap-B/event")
}
