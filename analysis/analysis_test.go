package analysis

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite the golden files in testdata")

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	return tracetest.ReadText(t, filepath.Join("testdata", name+".txt"))
}

// dump prints an analysis one object per line, then the problems, the
// bytes-in-use counters and the ranges, for golden files.
func dump(t *trace.Trace, a *Analysis) string {
	var b strings.Builder
	for _, o := range a.Objects {
		fmt.Fprintf(&b, "%s pid=%d handle=%#x dev=%d create=%d destroy=%d start=%d end=%d lifetime=%d %s tid=%d",
			o.Kind, o.PID, o.Handle, o.Device, o.Create, o.Destroy, o.Start, o.End, o.Lifetime(), o.Reason, o.TID)
		if o.Caller != 0 {
			fmt.Fprintf(&b, " caller=%#x", o.Caller)
		}
		if o.Bytes != 0 {
			fmt.Fprintf(&b, " bytes=%d", o.Bytes)
		}
		if o.Pool != 0 || o.DefaultPool {
			fmt.Fprintf(&b, " pool=%#x default=%v", o.Pool, o.DefaultPool)
		}
		if o.Stream != 0 {
			fmt.Fprintf(&b, " stream=%#x", o.Stream)
		}
		if o.Context != 0 {
			fmt.Fprintf(&b, " context=%#x", o.Context)
		}
		if o.Parent != 0 {
			fmt.Fprintf(&b, " parent=%#x", o.Parent)
		}
		if o.Primary {
			fmt.Fprintf(&b, " primary retains=%d", o.Retains)
		}
		if o.Uses != 0 {
			fmt.Fprintf(&b, " uses=%d", o.Uses)
		}
		b.WriteByte('\n')
	}
	for _, p := range a.Problems {
		fmt.Fprintf(&b, "problem event=%d (%s) %s %#x: %s\n", p.Event, t.Events[p.Event].API, p.Kind, p.Handle, p.Reason)
	}
	for _, c := range a.BytesInUse() {
		fmt.Fprintf(&b, "bytes pid=%d dev=%d %s pool=%#x default=%v peak=%d:", c.Key.PID, c.Key.Device, c.Key.Kind,
			c.Key.Pool, c.Key.DefaultPool, c.Peak)
		for _, s := range c.Samples {
			fmt.Fprintf(&b, " %d@%d", s.Bytes, s.T)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestGolden prints the lifecycle of every fixture. The golden files are
// those the former internal/lifecycle produced after its device
// attribution, unchanged.
func TestGolden(t *testing.T) {
	names, _ := filepath.Glob("testdata/*.txt")
	for _, n := range names {
		name := strings.TrimSuffix(filepath.Base(n), ".txt")
		if strings.HasSuffix(name, ".golden") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tr := readFixture(t, name)
			got := dump(tr, Of(tr))
			update.Check(t, filepath.Join("testdata", name+".golden.txt"), []byte(got))
		})
	}
}

func TestDoesNotModifyTrace(t *testing.T) {
	tr := readFixture(t, "devices")
	before := append([]trace.Event(nil), tr.Events...)
	Of(tr)
	if !reflect.DeepEqual(before, tr.Events) {
		t.Fatal("the analysis changed the trace's events")
	}
}

func TestPairing(t *testing.T) {
	tr := readFixture(t, "pairing")
	a := Of(tr)

	if len(a.Objects) != 5 {
		t.Fatalf("got %d objects, want 5: %+v", len(a.Objects), a.Objects)
	}
	ctx, s1, s2, ev, al := a.Objects[0], a.Objects[1], a.Objects[2], a.Objects[3], a.Objects[4]
	if ctx.Kind != trace.ObjectContext || !ctx.Primary || ctx.Reason != EndAlive || ctx.Device != 0 {
		t.Errorf("primary context: %+v", ctx)
	}
	if s1.Kind != trace.ObjectStream || s1.Handle != 0x10 || s1.Create != 2 || s1.Destroy != 4 || s1.Ender != 4 ||
		s1.Lifetime() != 530-300 || s1.Caller != 0x401000 || s1.Device != 0 || s1.Context != 0xc0 {
		t.Errorf("first stream: %+v", s1)
	}
	if !s1.Churn(ChurnWindow) {
		t.Errorf("first stream should be churn")
	}
	if s2.Handle != 0x10 || s2.Create != 5 || !s2.Alive() || s2.End != 1110 || s2.Ender != -1 {
		t.Errorf("reused stream: %+v", s2)
	}
	if ev.Kind != trace.ObjectEvent || !ev.Alive() {
		t.Errorf("event: %+v", ev)
	}
	if al.Kind != trace.ObjectAllocation || al.Bytes != 4096 || al.Reason != EndDestroyed || al.Device != 0 {
		t.Errorf("allocation: %+v", al)
	}
	if len(a.Problems) != 1 || a.Problems[0].Event != 6 || a.Problems[0].Handle != 0x99 {
		t.Errorf("problems: %+v", a.Problems)
	}
	if got := len(a.Alive()); got != 3 {
		t.Errorf("alive: %d, want 3", got)
	}
	sum := a.Summary()
	if len(sum) != 4 {
		t.Fatalf("summary kinds: %+v", sum)
	}
	st := sum[1]
	if st.Kind != trace.ObjectStream || st.Created != 2 || st.Destroyed != 1 || st.Alive != 1 || st.Churn != 1 ||
		st.Lifetime(50) != s1.Lifetime() || st.Lifetime(100) != s1.Lifetime() {
		t.Errorf("stream summary: %+v", st)
	}
}

func TestPrimaryRefcount(t *testing.T) {
	a := Of(readFixture(t, "primary_refcount"))
	if len(a.Objects) != 2 {
		t.Fatalf("objects: %+v", a.Objects)
	}
	if o := a.Objects[0]; o.Reason != EndDestroyed || o.Destroy != 3 || o.Lifetime() != 310 {
		t.Errorf("device 0 primary: %+v", o)
	}
	if o := a.Objects[1]; o.Reason != EndDestroyed || o.Destroy != 6 || o.Device != 1 {
		t.Errorf("device 1 primary: %+v", o)
	}
	if len(a.Problems) != 1 || a.Problems[0].Event != 4 {
		t.Errorf("problems: %+v", a.Problems)
	}
}

func TestContextDestroyEndsChildren(t *testing.T) {
	tr := readFixture(t, "context_destroy")
	var ended []ObjectID
	a := Of(tr, OnEvent(func(e *Event) {
		if e.Index == 3 {
			ended = append(ended, e.Ended...)
			if e.Object != 0 {
				t.Errorf("context destroy: object %d, want 0", e.Object)
			}
		}
	}))
	if len(a.Objects) != 4 {
		t.Fatalf("objects: %+v", a.Objects)
	}
	for _, j := range []int{1, 2} {
		if o := a.Objects[j]; o.Reason != EndContext || o.End != 410 || o.Device != 1 || o.Ender != 3 || o.Destroy != -1 {
			t.Errorf("object %d: %+v", j, o)
		}
	}
	if !reflect.DeepEqual(ended, []ObjectID{1, 2}) {
		t.Errorf("ended by the context destroy: %v, want [1 2]", ended)
	}
	if o := a.Objects[2]; !o.DefaultPool || o.Pool != 0 || o.Stream != 0x10 {
		t.Errorf("async allocation pool: %+v", o)
	}
	if o := a.Objects[3]; o.Device != trace.NoDevice || !o.Alive() {
		t.Errorf("stream after destroy: %+v", o)
	}
}

func TestDevices(t *testing.T) {
	tr := readFixture(t, "devices")
	want := []int32{0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, trace.NoDevice, 3, trace.NoDevice, 2, 2}
	var got []int32
	Of(tr, OnEvent(func(e *Event) { got = append(got, e.Device) }))
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d (%s): device %d, want %d", i, tr.Events[i].API, got[i], w)
		}
	}
}

// TestFailedCallsMakeNoDevice: a failed call recording a device that no
// successful call of its process (nor the GPU list) showed is on no device;
// one on a device that exists keeps it.
func TestFailedCallsMakeNoDevice(t *testing.T) {
	tr := readFixture(t, "invalid_device")
	want := []int32{trace.NoDevice, 0, 0, 0, trace.NoDevice, trace.NoDevice, trace.NoDevice, 0, 2, 0, trace.NoDevice}
	var got []int32
	Of(tr, OnEvent(func(e *Event) { got = append(got, e.Device) }))
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d (%s %s dev=%d): device %d, want %d", i, tr.Events[i].API, tr.Events[i].Result,
				tr.Events[i].Device, got[i], w)
		}
	}
}

func TestContexts(t *testing.T) {
	tr := readFixture(t, "devices")
	// the current context before each call of thread 1
	want := map[int]uint64{2: 0, 3: 0xc0, 4: 0xc0, 5: 0xc1, 8: 0xc1, 9: 0xc0, 10: 0xc0, 11: 0xc1}
	Of(tr, OnEvent(func(e *Event) {
		if w, ok := want[e.Index]; ok && e.Context != w {
			t.Errorf("event %d (%s): context %#x, want %#x", e.Index, e.API, e.Context, w)
		}
		if e.Index == 5 && e.ContextDevice() != 1 {
			t.Errorf("event 5: context device %d, want 1", e.ContextDevice())
		}
	}))
}

func TestPools(t *testing.T) {
	a := Of(readFixture(t, "pools"))
	allocs := map[uint64]Object{}
	for _, o := range a.Objects {
		if o.Kind == trace.ObjectAllocation {
			allocs[o.Handle] = o
		}
	}
	if o := allocs[0x7000]; o.Pool != 0xd0 || !o.DefaultPool {
		t.Errorf("default-pool allocation: %+v", o)
	}
	if o := allocs[0x7100]; o.Pool != 0xa0 || o.DefaultPool {
		t.Errorf("pool allocation: %+v", o)
	}
	if o := allocs[0x7200]; o.Pool != 0xa0 || o.DefaultPool {
		t.Errorf("allocation after cuDeviceSetMemPool: %+v", o)
	}
	cs := a.BytesInUse()
	if len(cs) != 2 {
		t.Fatalf("counters: %+v", cs)
	}
	if c := cs[0]; !c.Key.DefaultPool || c.Peak != 100 || len(c.Samples) != 2 || c.Samples[1] != (Sample{710, 0}) {
		t.Errorf("default pool counter: %+v", c)
	}
	want := []Sample{{400, 50}, {600, 75}, {720, 25}}
	c := cs[1]
	if c.Key.Pool != 0xa0 || c.Peak != 75 || len(c.Samples) != len(want) {
		t.Fatalf("pool counter: %+v", c)
	}
	for i := range want {
		if c.Samples[i] != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, c.Samples[i], want[i])
		}
	}
}

func TestEnclosing(t *testing.T) {
	tr := readFixture(t, "enclosing")
	cases := map[int]string{0: "step", 1: "step", 2: "step/inner", 3: "step/inner", 4: "step/inner", 5: "step", 7: ""}
	paths := map[int]string{}
	a := Of(tr, OnEvent(func(e *Event) { paths[e.Index] = e.tr.a.PathString(e.Path) }))
	for i, want := range cases {
		if got := paths[i]; got != want {
			t.Errorf("event %d: path %q, want %q", i, got, want)
		}
	}
	if len(a.Ranges) != 2 || a.Ranges[1].Parent != 0 || a.Ranges[1].Depth != 1 || a.Ranges[0].End != 400 ||
		a.Ranges[1].Close != 4 || a.PathString(a.Ranges[1].Path) != "step/inner" {
		t.Errorf("ranges: %+v", a.Ranges)
	}
	// step: 400-100 = 300 in all, the two calls directly inside (10 ns each) and inner (100 ns)
	if tm := a.Ranges[0].Times; tm != (Times{InclusiveNs: 300, SelfNs: 180, DriverNs: 30, Calls: 3}) {
		t.Errorf("step times: %+v", tm)
	}
}

// TestRangePairing: push/pop ranges and spans nest by time, a start/end
// range may end on another thread, an unmatched pop and an end of an
// unknown id are problems, a range never closed ends at its process's last
// event. (These cases were trace.Ranges' before the analysis took it over.)
func TestRangePairing(t *testing.T) {
	const text = `cuprof-text 1
push 1/1 t=100 name=outer
span 1/1 t=150 end=400 name=Stream.Create domain=cudawrap
call 1/1 t=200 end=300 api=cuStreamCreate handle=0x10
push 1/1 t=500 name=inner
pop 1/1 t=600
pop 1/1 t=700
pop 1/1 t=800
start 1/1 t=900 id=7 name=load
end 1/2 t=950 id=7
end 1/2 t=960 id=8
push 1/2 t=970 name=open
call 1/2 t=990 end=1000 api=cuCtxGetCurrent
`
	tr, err := trace.ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	a := Of(tr)
	type want struct {
		name         string
		tid, endTID  uint32
		start, end   int64
		depth        int
		parent       int32
		unterminated bool
		origin       trace.Kind
		path         string
	}
	wants := []want{
		{"outer", 1, 1, 100, 700, 0, -1, false, trace.KindRangePush, "outer"},
		{"Stream.Create", 1, 1, 150, 400, 1, 0, false, trace.KindSpan, "outer/Stream.Create"},
		{"inner", 1, 1, 500, 600, 1, 0, false, trace.KindRangePush, "outer/inner"},
		{"load", 1, 2, 900, 950, -1, -1, false, trace.KindRangeStart, "load"},
		{"open", 2, 2, 970, 1000, 0, -1, true, trace.KindRangePush, "open"},
	}
	if len(a.Ranges) != len(wants) {
		t.Fatalf("got %d ranges, want %d: %+v", len(a.Ranges), len(wants), a.Ranges)
	}
	for i, w := range wants {
		r := a.Ranges[i]
		got := want{tr.String(r.Name), r.TID, r.EndTID, r.Start, r.End, r.Depth, r.Parent, r.Unterminated, r.Origin,
			a.PathString(r.Path)}
		if got != w {
			t.Errorf("range %d = %+v, want %+v", i, got, w)
		}
	}
	var reasons []string
	for _, p := range a.RangeProblems {
		reasons = append(reasons, tr.Events[p.Event].Kind.String()+": "+p.Reason)
	}
	wantProblems := []string{"pop: pop with no open range on its thread", "end: end of unknown range id 8"}
	if strings.Join(reasons, "|") != strings.Join(wantProblems, "|") {
		t.Errorf("problems = %q, want %q", reasons, wantProblems)
	}
}

func TestStepMatchesOf(t *testing.T) {
	tr := tracetest.LoopTrace(50)
	want := Of(tr)
	tk := NewTracker(tr)
	for i := range tr.Events {
		if ev := tk.Step(&tr.Events[i]); ev.Index != i || ev.Event != &tr.Events[i] {
			t.Fatalf("step %d returned event %d", i, ev.Index)
		}
	}
	got := tk.Finish()
	if !reflect.DeepEqual(got.Objects, want.Objects) || !reflect.DeepEqual(got.Ranges, want.Ranges) {
		t.Error("stepping the tracker gave another analysis than Of")
	}
	if got.Calls != 2*2+50*7 || got.Events != len(tr.Events) {
		t.Errorf("calls %d events %d", got.Calls, got.Events)
	}
}

func TestErrorRule(t *testing.T) {
	cases := []struct {
		api  trace.API
		res  trace.Result
		want bool
	}{
		{trace.APIStreamQuery, trace.ErrNotReady, false},
		{trace.APIEventQuery, trace.ErrNotReady, false},
		{trace.APIStreamSynchronize, trace.ErrNotReady, true},
		{trace.APIStreamQuery, trace.ErrInvalidHandle, true},
		{trace.APIMemAlloc, trace.Success, false},
		{trace.APIMemAlloc, trace.ErrOutOfMemory, true},
	}
	for _, c := range cases {
		e := &trace.Event{Kind: trace.KindCall, API: c.api, Result: c.res}
		if got := isError(e); got != c.want {
			t.Errorf("%s %s: IsError %v, want %v", c.api, c.res, got, c.want)
		}
	}
	if isError(&trace.Event{Kind: trace.KindRangePush, Result: 5}) {
		t.Error("a range event counted as an error")
	}
}

func TestCost(t *testing.T) {
	m := &trace.Meta{Overhead: trace.Overhead{InsideNs: 12.4, AddedNs: 30.6, PyEventNs: 25}}
	c := CostOf(m, false)
	if c != (Cost{InsideNs: 12, AddedNs: 31, PyEventNs: 25, PyCEventNs: 25}) { // a C-level frame costs a Python one's when not calibrated
		t.Errorf("cost %+v", c)
	}
	if c := CostOf(m, true); c != (Cost{}) {
		t.Errorf("raw cost %+v", c)
	}
	e := &trace.Event{Kind: trace.KindCall, Start: 100, End: 105}
	if d := c.callNs(e); d != 0 {
		t.Errorf("call shorter than the cost: %d, want 0", d)
	}
	if c := CostOf(&trace.Meta{Overhead: trace.Overhead{InsideNs: -3, AddedNs: 1e300}}, false); c != (Cost{}) {
		t.Errorf("absurd calibration: %+v", c)
	}
}

// TestForget: with Forget, the objects and ranges the callbacks see are
// those of the full analysis, and the tables end with the alive objects
// only, on random traces and the Python ones.
func TestForget(t *testing.T) {
	traces := []*trace.Trace{tracetest.PythonTrace(), tracetest.PythonWrapper(5), tracetest.LoopTrace(200)}
	for seed := uint64(1); seed <= 6; seed++ {
		traces = append(traces, tracetest.Random(seed, 3000))
	}
	for n, tr := range traces {
		type seen struct {
			objects []Object
			ranges  []Range
			paths   []string
		}
		run := func(opts ...Option) (*Analysis, *seen) {
			s := &seen{}
			var a *Analysis
			tk := NewTracker(tr, append(opts,
				OnObjectEnd(func(o *Object) { s.objects = append(s.objects, *o) }),
				OnRangeEnd(func(r *Range) { s.ranges = append(s.ranges, *r) }),
				OnEvent(func(e *Event) { s.paths = append(s.paths, e.tr.a.PathString(e.Path)) }))...)
			for i := range tr.Events {
				tk.Step(&tr.Events[i])
			}
			a = tk.Finish()
			return a, s
		}
		full, want := run()
		small, got := run(Forget())
		if !reflect.DeepEqual(got.objects, want.objects) {
			for i := range got.objects {
				if got.objects[i] != want.objects[i] {
					t.Errorf("trace %d: object %d seen with Forget\n %+v\nwant %+v", n, i, got.objects[i], want.objects[i])
					break
				}
			}
		}
		// Parent indexes are reused with Forget; compare the rest
		for i := range got.ranges {
			got.ranges[i].Parent, want.ranges[i].Parent = 0, 0
		}
		if !reflect.DeepEqual(got.ranges, want.ranges) || !reflect.DeepEqual(got.paths, want.paths) {
			t.Errorf("trace %d: ranges or paths seen with Forget differ", n)
		}
		alive := 0
		for _, o := range full.Objects {
			if o.Alive() {
				alive++
			}
		}
		if len(small.Objects) != alive || len(small.Ranges) != 0 || !reflect.DeepEqual(small.ByCode(), full.ByCode()) {
			t.Errorf("trace %d: %d objects left (want the %d alive), %d ranges", n, len(small.Objects), alive, len(small.Ranges))
		}
	}
}

// TestEventAnalysis: during the replay an event's Analysis is the one Finish
// returns, its paths are already named, and Objects[e.Object] is the object
// the event names (also with Forget, whose rows are reused).
func TestEventAnalysis(t *testing.T) {
	tr := tracetest.LoopTrace(50)
	for _, forget := range []bool{false, true} {
		var seen *Analysis
		paths, created := 0, 0
		opts := []Option{OnEvent(func(e *Event) {
			a := e.Analysis()
			if seen == nil {
				seen = a
			}
			if a != seen {
				t.Fatalf("event %d: another Analysis", e.Index)
			}
			if e.Path != noPath {
				if got := a.PathString(e.Path); got != "step" {
					t.Errorf("event %d: path %q during the replay", e.Index, got)
				}
				paths++
			}
			if e.Created() {
				if o := &a.Objects[e.Object]; o.Create != e.Index || o.Handle != e.Handle {
					t.Errorf("event %d: Objects[%d] is %+v", e.Index, e.Object, o)
				}
				created++
			}
		})}
		if forget {
			opts = append(opts, Forget())
		}
		if a := Of(tr, opts...); a != seen {
			t.Errorf("forget %v: Finish returned another Analysis", forget)
		}
		if paths == 0 || created != 1+2*50 { // the primary context, a stream and an allocation per iteration
			t.Errorf("forget %v: %d events in a range, %d created", forget, paths, created)
		}
	}
}

// TestTallyMerge: tallies per device merged give the summary of all the
// objects, lifetime percentiles included.
func TestTallyMerge(t *testing.T) {
	a := Of(tracetest.Random(3, 3000))
	on := map[int32]*Tally{}
	for i := range a.Objects {
		o := &a.Objects[i]
		if on[o.Device] == nil {
			on[o.Device] = &Tally{}
		}
		on[o.Device].Add(o)
	}
	if len(on) < 2 {
		t.Fatalf("objects on %d devices; want a trace of several", len(on))
	}
	var merged Tally
	for _, tl := range on {
		merged.Merge(tl)
	}
	want, got := a.Summary(), merged.Summary()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d kinds merged, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Kind != g.Kind || w.Created != g.Created || w.Destroyed != g.Destroyed || w.Implicit != g.Implicit ||
			w.Alive != g.Alive || w.Churn != g.Churn || w.Bytes != g.Bytes ||
			w.Lifetime(50) != g.Lifetime(50) || w.Lifetime(99) != g.Lifetime(99) {
			t.Errorf("%s: merged %+v (median %d), want %+v (median %d)", w.Kind, g, g.Lifetime(50), w, w.Lifetime(50))
		}
	}
}
