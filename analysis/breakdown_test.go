package analysis

import (
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestBreakdownOf: a capture range 0-2000 holding a frame A (100-1000) with
// a call inside and a call at top level; a stream created outside the range
// (kept) is not in the breakdown. The parts add up to the range.
func TestBreakdownOf(t *testing.T) {
	tr := &trace.Trace{Strings: []string{"", "A", "mod", "cuProfilerStart"}}
	tr.Code = []trace.Code{{}, {Kind: trace.CodePython, Name: 1, Module: 2}}
	tr.Meta.Overhead = trace.Overhead{InsideNs: 10, AddedNs: 20, PyEventNs: 5}
	tr.Meta.CaptureRange = "profiler-api"
	tr.Events = []trace.Event{
		{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: -500, End: -100, API: trace.APIStreamCreate, Handle: 0x10},
		{Kind: trace.KindCapture, PID: 1, TID: 1, Device: -1, Start: 0, End: 2000, Name: 3},
		{Kind: trace.KindFrame, PID: 1, TID: 1, Device: -1, Start: 100, End: 1000, Code: 1},
		{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: 200, End: 500, API: trace.APIStreamQuery, Handle: 0x10},
		{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: 1200, End: 1300, API: trace.APIStreamDestroy, Handle: 0x10},
	}
	b := BreakdownOf(tr)
	if b.Ranges != 1 || b.RangeNs != 2000 {
		t.Errorf("ranges %d, %d ns; want 1, 2000", b.Ranges, b.RangeNs)
	}
	// calls: 300-10 and 100-10; the create outside is not counted
	if b.DriverNs != 380 || len(b.APIs) != 2 || b.APIs[0].API != trace.APIStreamQuery || b.APIs[0].Ns != 290 {
		t.Errorf("driver %d ns, %+v", b.DriverNs, b.APIs)
	}
	// A: 900 less 20 for its call, less the call's 290
	if len(b.Frames) != 1 || b.Frames[0].Name != "A" || b.Frames[0].Module != "mod" || b.Frames[0].SelfNs != 590 || b.FramesNs != 590 {
		t.Errorf("frames %+v (%d ns)", b.Frames, b.FramesNs)
	}
	if b.CostNs != 2*20+2*5 {
		t.Errorf("cost %d, want 50", b.CostNs)
	}
	if b.DriverNs+b.FramesNs+b.CostNs+b.RestNs != b.RangeNs || b.RestNs != 2000-380-590-50 {
		t.Errorf("rest %d: parts do not add up", b.RestNs)
	}
}
