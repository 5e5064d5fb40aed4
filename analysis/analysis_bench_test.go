package analysis

import (
	"reflect"
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
	cpu := cpuNs()
	for b.Loop() {
		Of(tr, OnEvent(func(e *Event) { sink += e.Duration }))
	}
	reportPerEvent(b, len(tr.Events), cpu)
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
				Start: e.Start - 1, End: e.Start + 14110, Code: 1}) // the iteration, up to its pop
		}
		evs = append(evs, e)
	}
	trace.SortEvents(evs)
	tr.Events = evs
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNs()
	for b.Loop() {
		Of(tr)
	}
	reportPerEvent(b, len(tr.Events), cpu)
}

// BenchmarkReplayForget is BenchmarkReplay with Forget, as report and flame
// run it: the tables keep only what is open.
func BenchmarkReplayForget(b *testing.B) {
	tr := tracetest.LoopTrace(20000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNs()
	for b.Loop() {
		Of(tr, Forget(), OnObjectEnd(func(*Object) {}))
	}
	reportPerEvent(b, len(tr.Events), cpu)
}

// reportPerEvent reports wall and CPU time per event (CPU since cpu0: on a
// loaded machine wall time mostly measures waiting).
func reportPerEvent(b *testing.B, events int, cpu0 int64) {
	n := float64(b.N) * float64(events)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	if cpu0 > 0 {
		b.ReportMetric(float64(cpuNs()-cpu0)/n, "cpu-ns/event")
	}
}

// TestStepDoesNotAllocate: once the tables hold what a loop makes, replaying
// more of it (ranges, calls naming live objects, frames of known stacks,
// set-current, queries) allocates nothing per event.
func TestStepDoesNotAllocate(t *testing.T) {
	tr := &trace.Trace{Strings: []string{"", "step"}, Code: []trace.Code{{}, {Kind: trace.CodePython, Name: 1}}}
	ev := func(kind trace.Kind, api trace.API, start, end int64, h uint64) trace.Event {
		return trace.Event{Kind: kind, API: api, PID: 1, TID: 1, Device: trace.NoDevice, Start: start, End: end,
			Handle: h, Stream: 0x10, Name: 1, Code: 1}
	}
	tk := NewTracker(tr, OnEvent(func(*Event) {}))
	tk.Step(&trace.Event{Kind: trace.KindCall, API: trace.APIDevicePrimaryCtxRetain, PID: 1, TID: 1, Device: 0, End: 5, Handle: 0xc0})
	create := ev(trace.KindCall, trace.APIStreamCreate, 10, 20, 0x10)
	tk.Step(&create)
	var ts int64 = 100
	var evs [7]trace.Event // reused: the tracker keeps a pointer to the last one
	loop := func() {
		evs = [...]trace.Event{
			ev(trace.KindFrame, 0, ts, ts+90, 0),
			ev(trace.KindRangePush, 0, ts+1, ts+1, 0),
			ev(trace.KindCall, trace.APICtxSetCurrent, ts+2, ts+10, 0xc0),
			ev(trace.KindCall, trace.APILaunchKernel, ts+11, ts+20, 0xf0),
			ev(trace.KindCall, trace.APIStreamSynchronize, ts+21, ts+40, 0x10),
			ev(trace.KindCall, trace.APIStreamQuery, ts+41, ts+50, 0x10),
			ev(trace.KindRangePop, 0, ts+60, ts+60, 0),
		}
		for i := range evs {
			tk.Step(&evs[i])
		}
		ts += 100
	}
	for range 100 {
		loop() // warm: thread state, stacks, paths
	}
	if n := testing.AllocsPerRun(1000, loop); n != 0 {
		t.Errorf("%.1f allocations per loop of 7 events, want 0", n)
	}
}

// TestStepResetsEveryEventField: Step resets the reused Event field by
// field (a composite literal's copy stalled); a field added to Event must
// be reset there too, and then counted here.
func TestStepResetsEveryEventField(t *testing.T) {
	if n := reflect.TypeFor[Event]().NumField(); n != 18 {
		t.Errorf("Event has %d fields, Step resets 18: reset the new one in Step and count it here", n)
	}
}

// TestAPIFactsMatchInfo: the replay's table of API facts says what
// trace.API.Info says, for every API ID (unknown ones too).
func TestAPIFactsMatchInfo(t *testing.T) {
	for i := 0; i <= 1<<16-1; i++ {
		a := trace.API(i)
		info, f := a.Info(), factsOf(a)
		want := apiFacts{Object: info.Object, AuxObject: info.AuxObject, Role: info.Role, AuxRole: info.AuxRole, Category: info.Category}
		got := apiFacts{Object: f.Object, AuxObject: f.AuxObject, Role: f.Role, AuxRole: f.AuxRole, Category: f.Category}
		if got != want {
			t.Fatalf("API %d (%s): facts %+v, Info says %+v", i, info.Name, *f, want)
		}
	}
}
