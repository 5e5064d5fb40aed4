package analysis

import (
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// Breakdown says where the time of a trace's capture ranges went (the whole
// trace's span when it has none): the driver calls by API, the Python-level
// frames' self time by code, cuprof's own calibrated cost, and the rest, so
// that DriverNs + FramesNs + CostNs + RestNs == RangeNs. cuprof timeit
// divides it by the number of timed calls.
type Breakdown struct {
	// Ranges is the number of capture ranges, RangeNs their summed length.
	Ranges  int
	RangeNs int64
	// APIs are the calls inside the ranges (never Outside ones) by API,
	// most time first; DriverNs sums them (each call's Duration).
	APIs     []APIShare
	DriverNs int64
	// Frames are the Python-level frames by code (their SelfNs), most
	// self time first; FramesNs sums them.
	Frames   []FrameShare
	FramesNs int64
	// CostNs is what recording added inside the ranges: Cost.AddedNs per
	// call, and per frame its two events and what the hooks did in its self
	// time and left no frame of (Cost.frameNs).
	CostNs int64
	// RestNs is what no call or frame holds: the code around them that
	// cuprof does not see as frames (a timing loop, bytecode of the frame
	// that opened the range), and the clock's noise. It may be negative
	// when the calibrated cost is above what this run paid.
	RestNs int64
}

// APIShare is one API's calls in a Breakdown.
type APIShare struct {
	API   trace.API
	Calls int
	Ns    int64
}

// FrameShare is one piece of code's frames in a Breakdown.
type FrameShare struct {
	Name, Module string
	Activations  int
	SelfNs       int64
}

// BreakdownOf replays t and breaks its capture ranges' time down.
func BreakdownOf(t *trace.Trace) Breakdown {
	var b Breakdown
	apis := map[trace.API]*APIShare{}
	var hooks float64
	cost := CostOf(&t.Meta, false) // as Of's
	a := Of(t, OnEvent(func(e *Event) {
		switch e.Kind {
		case trace.KindCall:
			if e.Outside {
				return
			}
			s := apis[e.API]
			if s == nil {
				s = &APIShare{API: e.API}
				apis[e.API] = s
			}
			s.Calls++
			s.Ns += e.Duration
			b.DriverNs += e.Duration
		case trace.KindFrame:
			native := int(e.Code) < len(t.Code) && t.Code[e.Code].Kind == trace.CodeNative
			hooks += cost.frameNs(e.Event, native)
		}
	}))
	calls := 0
	for _, s := range apis {
		b.APIs = append(b.APIs, *s)
		calls += s.Calls
	}
	sort.Slice(b.APIs, func(i, j int) bool {
		if b.APIs[i].Ns != b.APIs[j].Ns {
			return b.APIs[i].Ns > b.APIs[j].Ns
		}
		return b.APIs[i].API < b.APIs[j].API
	})
	b.Ranges = len(a.Captures)
	for _, c := range a.Captures {
		b.RangeNs += c.Duration()
	}
	if b.Ranges == 0 && a.Last > a.First {
		b.RangeNs = a.Last - a.First
	}
	for _, c := range a.ByCode() {
		code := a.code(c.Code)
		b.Frames = append(b.Frames, FrameShare{Name: CodeName(t, c.Code), Module: t.String(code.Module),
			Activations: c.Activations, SelfNs: c.SelfNs})
		b.FramesNs += c.SelfNs
	}
	b.CostNs = a.Cost.enclosed(int64(calls), hooks)
	b.RestNs = b.RangeNs - b.DriverNs - b.FramesNs - b.CostNs
	return b
}
