package lifecycle

import (
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// benchTrace is a stream-per-call loop: retain, then n times create a stream,
// allocate, free, synchronize and destroy the stream.
func benchTrace(n int) *trace.Trace {
	b := newBuilder()
	b.call(0, 10, trace.APIDevicePrimaryCtxRetain, h(0xc0), dev(0))
	b.call(20, 10, trace.APICtxSetCurrent, h(0xc0))
	ts := int64(100)
	for i := 0; i < n; i++ {
		s := uint64(0x10 + i%4)
		b.call(ts, 50, trace.APIStreamCreate, h(s))
		b.call(ts+100, 30, trace.APIMemAllocAsync, h(0x7000+uint64(i%7)*0x100), size(4096), stream(s))
		b.call(ts+200, 30, trace.APIMemFreeAsync, h(0x7000+uint64(i%7)*0x100), stream(s))
		b.call(ts+300, 400, trace.APIStreamSynchronize, h(s), stream(s))
		b.call(ts+800, 40, trace.APIStreamDestroy, h(s))
		ts += 1000
	}
	return b.done()
}

func BenchmarkAnalyze(b *testing.B) {
	tr := benchTrace(20000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Analyze(tr)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
}

func BenchmarkAttributeDevices(b *testing.B) {
	tr := benchTrace(20000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range tr.Events {
			tr.Events[i].Device = trace.NoDevice
		}
		tr.Events[0].Device = 0
		AttributeDevices(tr)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
}
