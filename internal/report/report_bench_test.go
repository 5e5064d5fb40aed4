package report

import (
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
)

func BenchmarkBuild(b *testing.B) {
	tr := tracetest.LoopTrace(20000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Build(tr, Options{})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
}
