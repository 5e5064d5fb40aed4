package analysis

import (
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// BenchmarkReplay replays a realistic loop (ranges, streams per call, async
// allocations, launches, synchronizes) through the tracker with a visitor,
// as report and lint do. allocs/op over the trace's ~140k events shows the
// hot path does not allocate per event.
func BenchmarkReplay(b *testing.B) {
	tr := tracetest.LoopTrace(20000)
	var sink int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Of(tr, OnEvent(func(e *Event) { sink += e.Duration }))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
	_ = sink
}

// BenchmarkReplayFrames is the same with a Python frame around every call
// and a frame above each iteration.
func BenchmarkReplayFrames(b *testing.B) {
	tr := tracetest.LoopTrace(20000)
	tr.Code = []trace.Code{{}, {Kind: trace.CodePython, Name: 0}, {Kind: trace.CodeNative, Name: 0}}
	var evs []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindCall {
			evs = append(evs, trace.Event{Kind: trace.KindFrame, PID: e.PID, TID: e.TID, Device: -1,
				Start: e.Start - 5, End: e.End + 5, Code: 2})
		}
		if e.Kind == trace.KindRangePush {
			evs = append(evs, trace.Event{Kind: trace.KindFrame, PID: e.PID, TID: e.TID, Device: -1,
				Start: e.Start - 1, End: e.Start + 30000, Code: 1})
		}
		evs = append(evs, e)
	}
	trace.SortEvents(evs)
	tr.Events = evs
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Of(tr)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tr.Events)), "ns/event")
}
