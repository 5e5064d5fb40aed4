package analysis

import (
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// hookCostTrace: a Python frame A (0-10000) whose self time held 3 Python
// activations and 2 C-level ones that the hooks pushed and did not write,
// and 4 hook calls that pushed nothing; under it a Python frame B
// (1000-3000) with one hidden Python activation and a driver call
// (1500-2000), and a C-level frame C (4000-4500) with nothing hidden.
func hookCostTrace() *trace.Trace {
	t := &trace.Trace{Strings: []string{"", "A", "B", "C"}}
	t.Code = []trace.Code{{}, {Kind: trace.CodePython, Name: 1}, {Kind: trace.CodePython, Name: 2},
		{Kind: trace.CodeNative, Name: 3}}
	t.Meta.Overhead = trace.Overhead{InsideNs: 10, AddedNs: 30, PyEventNs: 20, PyCEventNs: 25, PyInsideNs: 8,
		PyCInsideNs: 6, PyHiddenNs: 40, PyCHiddenNs: 50, PyLoneNs: 5}
	frame := func(s, e int64, code trace.CodeID, hidden, hiddenC, lone uint64) trace.Event {
		return trace.Event{Kind: trace.KindFrame, PID: 1, TID: 1, Device: -1, Start: s, End: e, Code: code,
			Size: hidden, Aux: hiddenC, ID: lone}
	}
	t.Events = []trace.Event{
		frame(0, 10000, 1, 3, 2, 4),
		frame(1000, 3000, 2, 1, 0, 0),
		{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: 1500, End: 2000, API: trace.APICtxGetCurrent},
		frame(4000, 4500, 3, 0, 0, 0),
	}
	trace.SortEvents(t.Events)
	return t
}

// TestHookCostSubtracted: each calibrated cost comes out of the frame whose
// time it inflated. The call's own duration loses InsideNs; B loses the
// call's AddedNs, its hidden activation's PyHiddenNs and the part of its
// own events inside it (PyInsideNs); C its own inside part (PyCInsideNs);
// A its own hidden work (3 x 40 + 2 x 50 + 4 x 5), the whole of B's and
// C's recording (two events each and what they hid: 2 x 20 + 40, 2 x 25),
// the call's AddedNs and its own inside part. Self times follow, and the
// breakdown counts every one of those costs once.
func TestHookCostSubtracted(t *testing.T) {
	tr := hookCostTrace()
	got := map[string]Times{}
	a := Of(tr, OnFrameEnd(func(f *Frame) { got[tr.String(tr.Code[f.Code].Name)] = f.Times }))
	callNs := int64(500 - 10)
	bIncl := int64(2000 - 30 - 40 - 8)
	cIncl := int64(500 - 6)
	aIncl := int64(10000 - 30 - (3*40 + 2*50 + 4*5) - (2*20 + 40) - 2*25 - 8)
	want := map[string]Times{
		"A": {InclusiveNs: aIncl, SelfNs: aIncl - bIncl - cIncl, DriverNs: callNs, Calls: 1, OffPathNs: cIncl},
		"B": {InclusiveNs: bIncl, SelfNs: bIncl - callNs, DriverNs: callNs, Calls: 1},
		"C": {InclusiveNs: cIncl, SelfNs: cIncl},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	var self int64
	for _, c := range a.ByCode() {
		self += c.SelfNs
	}
	if w := want["A"].SelfNs + want["B"].SelfNs + want["C"].SelfNs; self != w {
		t.Errorf("ByCode self times sum to %d, want %d", self, w)
	}

	b := BreakdownOf(tr)
	cost := int64(30 + (2*20 + 3*40 + 2*50 + 4*5) + (2*20 + 40) + 2*25)
	if b.DriverNs != callNs || b.FramesNs != self || b.CostNs != cost {
		t.Errorf("breakdown: driver %d frames %d cost %d, want %d %d %d", b.DriverNs, b.FramesNs, b.CostNs, callNs, self, cost)
	}
	if b.DriverNs+b.FramesNs+b.CostNs+b.RestNs != b.RangeNs {
		t.Errorf("breakdown parts %+v do not add up to %d", b, b.RangeNs)
	}
}

// TestHookCostRaw: with raw times nothing is taken out, and a trace of
// before the hidden counts (no PyHiddenNs...) subtracts its frames' events
// as before: a C-level frame at PyEventNs.
func TestHookCostRaw(t *testing.T) {
	tr := hookCostTrace()
	got := map[string]Times{}
	Of(tr, Raw(), OnFrameEnd(func(f *Frame) { got[tr.String(tr.Code[f.Code].Name)] = f.Times }))
	if got["A"].InclusiveNs != 10000 || got["B"].InclusiveNs != 2000 || got["C"].InclusiveNs != 500 {
		t.Errorf("raw times %+v", got)
	}
	tr.Meta.Overhead = trace.Overhead{InsideNs: 10, AddedNs: 30, PyEventNs: 20}
	got = map[string]Times{}
	Of(tr, OnFrameEnd(func(f *Frame) { got[tr.String(tr.Code[f.Code].Name)] = f.Times }))
	if w := int64(10000 - 30 - 2*20 - 2*20); got["A"].InclusiveNs != w {
		t.Errorf("A without the new calibration: %d, want %d", got["A"].InclusiveNs, w)
	}
	if got["B"].InclusiveNs != 2000-30 || got["C"].InclusiveNs != 500 {
		t.Errorf("B %d, C %d, want 1970 and 500", got["B"].InclusiveNs, got["C"].InclusiveNs)
	}
}
