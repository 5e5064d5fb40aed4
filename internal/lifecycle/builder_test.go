package lifecycle

import "github.com/cuprof/cuprof/trace"

// builder makes small traces for benchmarks.
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
