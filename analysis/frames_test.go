package analysis

import (
	"reflect"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// framesTrace: on thread 1 a Python frame A (100-1000) calls B (200-600),
// which makes a driver call; A then opens a cudawrap span S around a second
// call, and makes a third call itself. On thread 2 R calls itself.
func framesTrace() *trace.Trace {
	t := &trace.Trace{Strings: []string{"", "A", "B", "R", "S", "mod"}}
	t.Code = []trace.Code{{}, {Kind: trace.CodePython, Name: 1, Module: 5}, {Kind: trace.CodePython, Name: 2},
		{Kind: trace.CodeNative, Name: 3}}
	t.Meta.Overhead = trace.Overhead{InsideNs: 10, AddedNs: 20, PyEventNs: 5}
	call := func(tid uint32, s, e int64, api trace.API, h uint64) trace.Event {
		return trace.Event{Kind: trace.KindCall, PID: 1, TID: tid, Device: 0, Start: s, End: e, API: api, Handle: h}
	}
	frame := func(tid uint32, s, e int64, code trace.CodeID, flags uint64) trace.Event {
		return trace.Event{Kind: trace.KindFrame, PID: 1, TID: tid, Device: -1, Start: s, End: e, Code: code, Flags: flags}
	}
	t.Events = []trace.Event{
		frame(1, 100, 1000, 1, 0),
		frame(1, 200, 600, 2, trace.FrameUnwound),
		call(1, 300, 400, trace.APIStreamCreate, 0x10),
		{Kind: trace.KindSpan, PID: 1, TID: 1, Device: -1, Start: 650, End: 900, Name: 4},
		call(1, 700, 800, trace.APIStreamSynchronize, 0x10),
		call(1, 920, 950, trace.APIStreamDestroy, 0x10),
		frame(2, 0, 100, 3, 0),
		frame(2, 10, 50, 3, 0),
	}
	trace.SortEvents(t.Events)
	return t
}

func TestFrames(t *testing.T) {
	tr := framesTrace()
	var frames []Frame
	stacks := map[trace.API][]trace.CodeID{}
	paths := map[trace.API]string{}
	a := Of(tr, OnFrameEnd(func(f *Frame) { frames = append(frames, *f) }), OnEvent(func(e *Event) {
		if e.Kind == trace.KindCall {
			stacks[e.API] = e.tr.a.FrameStack(e.Frame)
			paths[e.API] = e.tr.a.PathString(e.Path)
		}
	}))
	if want := []trace.CodeID{1, 2}; !reflect.DeepEqual(stacks[trace.APIStreamCreate], want) {
		t.Errorf("stack of the call in B: %v, want %v", stacks[trace.APIStreamCreate], want)
	}
	if want := []trace.CodeID{1}; !reflect.DeepEqual(stacks[trace.APIStreamSynchronize], want) ||
		paths[trace.APIStreamSynchronize] != "S" {
		t.Errorf("call in the span: stack %v path %q, want [1] and S", stacks[trace.APIStreamSynchronize], paths[trace.APIStreamSynchronize])
	}
	if len(frames) != 4 {
		t.Fatalf("frames: %+v", frames)
	}
	byCode := map[trace.CodeID][]Times{}
	for _, f := range frames {
		byCode[f.Code] = append(byCode[f.Code], f.Times)
	}
	// calls take 90, 90 and 20 ns once InsideNs (10) is out
	// B: 400 less one call's AddedNs (20) = 380; self 380-90
	if got, want := byCode[2], []Times{{InclusiveNs: 380, SelfNs: 290, DriverNs: 90, Calls: 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("B: %+v, want %+v", got, want)
	}
	// A: 900 less 3 calls (60) and B's entry and exit (10) = 830; self less B (380), S (230) and the call (20)
	if got, want := byCode[1], []Times{{InclusiveNs: 830, SelfNs: 200, DriverNs: 200, Calls: 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("A: %+v, want %+v", got, want)
	}
	if s := a.Ranges[0].Times; s != (Times{InclusiveNs: 230, SelfNs: 140, DriverNs: 90, Calls: 1}) {
		t.Errorf("span: %+v", s)
	}
	if a.Ranges[0].Stack == NoFrame || a.FrameCode(a.Ranges[0].Stack) != 1 {
		t.Errorf("span opened in frame %d", a.Ranges[0].Stack)
	}
	cs := a.ByCode()
	if len(cs) != 3 || cs[0].Code != 2 || cs[0].SelfNs < cs[1].SelfNs {
		t.Fatalf("by code: %+v", cs)
	}
	for _, c := range cs {
		switch c.Code {
		case 2:
			if c.Unwound != 1 {
				t.Errorf("B unwound %d, want 1", c.Unwound)
			}
		case 3:
			// R: outer 100-10 (inner's events) = 90, inner 40; inclusive counts the outer only
			if c.Activations != 2 || c.InclusiveNs != 90 || c.SelfNs != 50+40 {
				t.Errorf("recursive R: %+v", c)
			}
		}
	}
	if o := a.Objects[0]; o.Frame == NoFrame || !reflect.DeepEqual(a.FrameStack(o.Frame), []trace.CodeID{1, 2}) {
		t.Errorf("stream created in frame %v", a.FrameStack(o.Frame))
	}
}

func TestFramesRaw(t *testing.T) {
	a := Of(framesTrace(), Raw())
	for _, c := range a.ByCode() {
		if c.Code == 1 && (c.InclusiveNs != 900 || c.SelfNs != 900-400-250-30 || c.DriverNs != 230) {
			t.Errorf("raw A: %+v", c)
		}
	}
}

func TestScopes(t *testing.T) {
	tr := framesTrace()
	var scope ScopeID
	a := Of(tr, OnEvent(func(e *Event) {
		if e.Kind == trace.KindCall && e.API == trace.APIStreamSynchronize {
			scope = e.Scope
		}
	}))
	// the call in span S, which A opened: A/S, frames and ranges interleaved
	frame, _, name, _ := a.ScopeFrame(scope)
	if frame || tr.String(name) != "S" {
		t.Fatalf("innermost scope: frame %v name %q", frame, tr.String(name))
	}
	parent := a.ScopeParent(scope)
	if frame, code, _, _ := a.ScopeFrame(parent); !frame || code != 1 || a.ScopeParent(parent) != NoScope {
		t.Errorf("scope above S: frame %v code %d", frame, code)
	}
	if a.Ranges[0].Scope != scope {
		t.Errorf("span scope %d, call's %d", a.Ranges[0].Scope, scope)
	}
}

// TestOuter checks the activation around each event: calls name the frame
// or range they are directly inside, opening events the one around them.
func TestOuter(t *testing.T) {
	tr := framesTrace()
	outer := map[int]int{}
	Of(tr, OnEvent(func(e *Event) { outer[e.Index] = e.Outer }))
	idx := func(kind trace.Kind, start int64) int {
		for i := range tr.Events {
			if tr.Events[i].Kind == kind && tr.Events[i].Start == start {
				return i
			}
		}
		t.Fatalf("no %v at %d", kind, start)
		return -1
	}
	a, b, s := idx(trace.KindFrame, 100), idx(trace.KindFrame, 200), idx(trace.KindSpan, 650)
	for _, c := range []struct {
		name      string
		event     int
		wantOuter int
	}{
		{"A", a, -1},
		{"B in A", b, a},
		{"call in B", idx(trace.KindCall, 300), b},
		{"S in A", s, a},
		{"call in S", idx(trace.KindCall, 700), s},
		{"call in A after S", idx(trace.KindCall, 920), a},
		{"outer R", idx(trace.KindFrame, 0), -1},
		{"inner R", idx(trace.KindFrame, 10), idx(trace.KindFrame, 0)},
	} {
		if got := outer[c.event]; got != c.wantOuter {
			t.Errorf("%s: outer %d, want %d", c.name, got, c.wantOuter)
		}
	}
}

func TestInRange(t *testing.T) {
	tr := framesTrace()
	got := map[int]string{}
	Of(tr, OnEvent(func(e *Event) {
		if r := e.InRange(); r != nil {
			got[e.Index] = tr.String(r.Name)
		} else if e.Range >= 0 {
			t.Errorf("event %d: Range %d but no InRange", e.Index, e.Range)
		}
	}))
	for i, e := range tr.Events {
		want := ""
		if e.Kind == trace.KindSpan || (e.Kind == trace.KindCall && e.Start == 700) {
			want = "S"
		}
		if got[i] != want {
			t.Errorf("event %d (%v at %d): in range %q, want %q", i, e.Kind, e.Start, got[i], want)
		}
	}
}

// TestCreated: only the call that made an object is its creation, with or
// without Forget (whose rows are reused).
func TestCreated(t *testing.T) {
	tr := &trace.Trace{Strings: []string{""}}
	call := func(s int64, api trace.API, h uint64) trace.Event {
		return trace.Event{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: s, End: s + 10, API: api, Handle: h}
	}
	tr.Events = []trace.Event{
		call(0, trace.APIDevicePrimaryCtxRetain, 0xc0),
		call(100, trace.APIDevicePrimaryCtxRetain, 0xc0), // counted, not created
		call(200, trace.APIStreamCreate, 0x10),
		call(300, trace.APIStreamSynchronize, 0x10),
		call(400, trace.APIStreamDestroy, 0x10),
		call(500, trace.APIStreamCreate, 0x10), // the handle again: a new object
	}
	for _, opts := range [][]Option{nil, {Forget()}} {
		var got []int
		Of(tr, append(opts, OnEvent(func(e *Event) {
			if e.Created() {
				got = append(got, e.Index)
			}
		}))...)
		if want := []int{0, 2, 5}; !reflect.DeepEqual(got, want) {
			t.Errorf("created by events %v, want %v (options %d)", got, want, len(opts))
		}
	}
}

// TestOverlappingFramesStayAStack: frames that each start before the last
// one ended (as a broken clock or capture could write them) are cut at the
// end of the frame they start in, so the stack does not grow with them.
func TestOverlappingFramesStayAStack(t *testing.T) {
	tr := &trace.Trace{Strings: []string{""}, Code: []trace.Code{{}, {Kind: trace.CodePython}}}
	for i := int64(0); i < 1000; i++ {
		tr.Events = append(tr.Events, trace.Event{Kind: trace.KindFrame, PID: 1, TID: 1, Device: -1,
			Start: i * 100, End: i*100 + 150, Code: 1})
	}
	a := Of(tr)
	if n := a.Stacks(); n > 3 {
		t.Errorf("%d stacks for overlapping frames of one code, want at most 2 (and the empty one)", n)
	}
	if s := a.ByCode()[0]; s.Activations != 1000 || s.InclusiveNs > 1000*150 {
		t.Errorf("frames: %+v", s)
	}
}

func TestFrameEnding(t *testing.T) {
	for flags, want := range map[uint64]string{0: "returned", trace.FrameUnwound: "unwound", trace.FrameYielded: "yielded",
		trace.FrameOpen: "open", trace.FrameOpen | trace.FrameUnwound: "open"} {
		if got := (&Frame{Flags: flags}).Ending(); got != want {
			t.Errorf("flags %b: %s, want %s", flags, got, want)
		}
	}
}
