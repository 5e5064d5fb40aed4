package lifecycle

import (
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// builder makes small traces for tests.
type builder struct {
	t *trace.Trace
}

func newBuilder() *builder {
	return &builder{t: &trace.Trace{Strings: []string{""}}}
}

type opt func(*trace.Event)

func h(v uint64) opt            { return func(e *trace.Event) { e.Handle = v } }
func dev(d int32) opt           { return func(e *trace.Event) { e.Device = d } }
func size(n uint64) opt         { return func(e *trace.Event) { e.Size = n } }
func aux(v uint64) opt          { return func(e *trace.Event) { e.Aux = v } }
func stream(v uint64) opt       { return func(e *trace.Event) { e.Stream = v } }
func tid(v uint32) opt          { return func(e *trace.Event) { e.TID = v } }
func caller(v uint64) opt       { return func(e *trace.Event) { e.Caller = v } }
func result(r trace.Result) opt { return func(e *trace.Event) { e.Result = r } }

func (b *builder) call(t int64, d int64, api trace.API, opts ...opt) {
	e := trace.Event{Kind: trace.KindCall, API: api, PID: 1, TID: 1, Device: trace.NoDevice, Start: t, End: t + d}
	for _, o := range opts {
		o(&e)
	}
	b.t.Events = append(b.t.Events, e)
}

func (b *builder) push(t int64, name string) {
	b.t.Events = append(b.t.Events, trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Device: trace.NoDevice,
		Start: t, End: t, Name: b.t.Intern(name)})
}

func (b *builder) pop(t int64) {
	b.t.Events = append(b.t.Events, trace.Event{Kind: trace.KindRangePop, PID: 1, TID: 1, Device: trace.NoDevice, Start: t, End: t})
}

func (b *builder) done() *trace.Trace {
	trace.SortEvents(b.t.Events)
	return b.t
}

func TestPairing(t *testing.T) {
	b := newBuilder()
	b.call(100, 10, trace.APIDevicePrimaryCtxRetain, h(0xc0), dev(0))
	b.call(200, 10, trace.APICtxSetCurrent, h(0xc0))
	b.call(300, 50, trace.APIStreamCreate, h(0x10), caller(0x401000))
	b.call(400, 20, trace.APIStreamCreate, h(0x11), result(trace.ErrOutOfMemory)) // failed: nothing
	b.call(500, 30, trace.APIStreamDestroy, h(0x10))
	b.call(600, 40, trace.APIStreamCreate, h(0x10))  // handle reuse
	b.call(700, 10, trace.APIStreamDestroy, h(0x99)) // unknown
	b.call(800, 10, trace.APIEventCreate, h(0xe0))
	b.call(900, 10, trace.APIMemAlloc, h(0x7000), size(4096))
	b.call(1000, 10, trace.APIMemFree, h(0x7000))
	b.call(1100, 10, trace.APIMemFree, h(0))
	tr := b.done()
	AttributeDevices(tr)
	a := Analyze(tr)

	if len(a.Objects) != 5 {
		t.Fatalf("got %d objects, want 5: %+v", len(a.Objects), a.Objects)
	}
	ctx, s1, s2, ev, al := a.Objects[0], a.Objects[1], a.Objects[2], a.Objects[3], a.Objects[4]
	if ctx.Kind != trace.ObjectContext || !ctx.Primary || ctx.Reason != EndAlive || ctx.Device != 0 {
		t.Errorf("primary context: %+v", ctx)
	}
	if s1.Kind != trace.ObjectStream || s1.Handle != 0x10 || s1.Create != 2 || s1.Destroy != 4 ||
		s1.Lifetime() != 530-300 || s1.Caller != 0x401000 || s1.Device != 0 || s1.Context != 0xc0 {
		t.Errorf("first stream: %+v", s1)
	}
	if !s1.Churn(ChurnWindow) {
		t.Errorf("first stream should be churn")
	}
	if s2.Handle != 0x10 || s2.Create != 5 || !s2.Alive() || s2.End != 1110 {
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
		len(st.Lifetimes) != 1 {
		t.Errorf("stream summary: %+v", st)
	}
}

func TestPrimaryRefcount(t *testing.T) {
	b := newBuilder()
	b.call(100, 10, trace.APIDevicePrimaryCtxRetain, h(0xc0), dev(0))
	b.call(200, 10, trace.APIDevicePrimaryCtxRetain, h(0xc0), dev(0))
	b.call(300, 10, trace.APIDevicePrimaryCtxRelease, dev(0))
	b.call(400, 10, trace.APIDevicePrimaryCtxRelease, dev(0))
	b.call(500, 10, trace.APIDevicePrimaryCtxRelease, dev(0)) // unknown now
	b.call(600, 10, trace.APIDevicePrimaryCtxRetain, h(0xc1), dev(1))
	b.call(700, 10, trace.APIDevicePrimaryCtxReset, dev(1))
	a := Analyze(b.done())
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
	b := newBuilder()
	b.call(100, 10, trace.APICtxCreate, h(0xc0), dev(1))
	b.call(200, 10, trace.APIStreamCreate, h(0x10))
	b.call(300, 10, trace.APIMemAllocAsync, h(0x7000), size(256), stream(0x10))
	b.call(400, 10, trace.APICtxDestroy, h(0xc0))
	b.call(500, 10, trace.APIStreamCreate, h(0x20)) // no context current any more
	tr := b.done()
	AttributeDevices(tr)
	a := Analyze(tr)
	if len(a.Objects) != 4 {
		t.Fatalf("objects: %+v", a.Objects)
	}
	for _, j := range []int{1, 2} {
		if o := a.Objects[j]; o.Reason != EndContext || o.End != 410 || o.Device != 1 {
			t.Errorf("object %d: %+v", j, o)
		}
	}
	if o := a.Objects[2]; !o.DefaultPool || o.Pool != 0 || o.Stream != 0x10 {
		t.Errorf("async allocation pool: %+v", o)
	}
	if o := a.Objects[3]; o.Device != trace.NoDevice || !o.Alive() {
		t.Errorf("stream after destroy: %+v", o)
	}
}

func TestAttributeDevicesSwitching(t *testing.T) {
	b := newBuilder()
	b.call(100, 10, trace.APIDevicePrimaryCtxRetain, h(0xc0), dev(0))
	b.call(110, 10, trace.APIDevicePrimaryCtxRetain, h(0xc1), dev(1))
	b.call(200, 10, trace.APICtxSetCurrent, h(0xc0))
	b.call(300, 10, trace.APIStreamCreate, h(0x10))
	b.call(400, 10, trace.APICtxSetCurrent, h(0xc1))
	b.call(500, 10, trace.APIStreamCreate, h(0x11))
	b.call(600, 10, trace.APIStreamSynchronize, h(0x10), stream(0x10)) // device 0 by its object
	b.call(700, 10, trace.APICtxSynchronize)                           // device 1: current
	b.call(800, 10, trace.APICtxPushCurrent, h(0xc0))
	b.call(900, 10, trace.APIMemAlloc, h(0x7000), size(8))
	b.call(1000, 10, trace.APICtxPopCurrent, h(0xc0))
	b.call(1100, 10, trace.APIMemFree, h(0x7000))                   // device 0 by its object
	b.call(1200, 10, trace.APIEventCreate, h(0xe0), tid(2))         // thread 2 has no context
	b.call(1300, 10, trace.APIMemAlloc, h(0x7100), size(8), dev(3)) // recorded device kept
	tr := b.done()
	AttributeDevices(tr)
	want := []int32{0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, trace.NoDevice, 3}
	for i, w := range want {
		if got := tr.Events[i].Device; got != w {
			t.Errorf("event %d (%s): device %d, want %d", i, tr.Events[i].API, got, w)
		}
	}
}

func TestPools(t *testing.T) {
	b := newBuilder()
	b.call(100, 10, trace.APIDeviceGetDefaultMemPool, h(0xd0), dev(0))
	b.call(200, 10, trace.APIMemAllocAsync, h(0x7000), size(100), dev(0))
	b.call(300, 10, trace.APIMemPoolCreate, h(0xa0), dev(0))
	b.call(400, 10, trace.APIMemAllocFromPoolAsync, h(0x7100), size(50), aux(0xa0), dev(0))
	b.call(500, 10, trace.APIDeviceSetMemPool, h(0xa0), dev(0))
	b.call(600, 10, trace.APIMemAllocAsync, h(0x7200), size(25), dev(0))
	b.call(700, 10, trace.APIMemFreeAsync, h(0x7000), dev(0))
	b.call(700, 20, trace.APIMemFreeAsync, h(0x7100), dev(0))
	a := Analyze(b.done())
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
	b := newBuilder()
	b.push(100, "step")
	b.call(150, 10, trace.APIStreamCreate, h(0x10))
	b.push(200, "inner")
	b.call(250, 10, trace.APIStreamDestroy, h(0x10))
	b.pop(300)
	b.call(350, 10, trace.APICtxSynchronize)
	b.pop(400)
	b.call(450, 10, trace.APICtxSynchronize)
	tr := b.done()
	en := NewEnclosing(tr)
	cases := map[int]string{0: "step", 1: "step", 2: "step/inner", 3: "step/inner", 5: "step", 7: ""}
	for i, want := range cases {
		if got := en.Path(i); got != want {
			t.Errorf("event %d: path %q, want %q", i, got, want)
		}
	}
	if en.Name(3) != "inner" || en.Range(7) != nil {
		t.Errorf("name(3)=%q range(7)=%v", en.Name(3), en.Range(7))
	}
}
