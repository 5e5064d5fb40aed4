package report

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
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

// BenchmarkBuildFromStream reports over a stream of generated events that
// nothing holds (a loop making and destroying a stream and an allocation
// per iteration, in an NVTX range): peak-B/event is the live heap the build
// holds at most (sampled every 32k events, after a GC) over the events. Past
// 2^20 calls of one API the percentiles come from a bounded sketch.
func BenchmarkBuildFromStream(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000, 3_000_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var retained uint64
			for b.Loop() {
				tables, events := tracetest.LoopStream(n)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				var heap uint64
				count := 0
				events2 := func(yield func(*trace.Event) bool) {
					for e := range events {
						if count++; count%(1<<15) == 0 {
							runtime.GC()
							runtime.ReadMemStats(&after)
							heap = max(heap, after.HeapAlloc-before.HeapAlloc)
						}
						if !yield(e) {
							return
						}
					}
				}
				r := BuildFrom(tables, events2, Options{})
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = max(heap, after.HeapAlloc-before.HeapAlloc)
				retained = max(retained, heap)
				runtime.KeepAlive(r)
			}
			b.ReportMetric(float64(retained)/float64(n), "peak-B/event")
		})
	}
}
