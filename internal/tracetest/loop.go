package tracetest

import (
	"io"

	"github.com/cuprof/cuprof/trace"
)

// LoopTrace is a realistic mix of n iterations on two threads: a range, a
// stream made per call, an async allocation and free, a launch, a
// synchronize and the stream's destroy, plus a cheap context query.
func LoopTrace(n int) *trace.Trace {
	st := trace.NewStringTable()
	step := st.ID("step")
	t := &trace.Trace{Meta: loopMeta}
	loopEvents(n, step, func(e *trace.Event) { t.Events = append(t.Events, *e) })
	t.Strings = st.Strings
	trace.SortEvents(t.Events)
	return t
}

var loopMeta = trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}}

// LoopEventsPerIteration is the number of events each iteration of
// LoopTrace adds (4 more start the trace).
const LoopEventsPerIteration = 9

// WriteLoop writes LoopTrace(n) to w in the binary form, as a stream: it
// holds at most one batch per thread, so it writes traces of any length
// (9n+4 events) in constant memory, as the recorder writes them: each
// thread's batches in time order.
func WriteLoop(w io.Writer, n int) error {
	tw := trace.NewWriter(w, loopMeta)
	step := tw.String("step")
	tw.AddProcess(trace.Process{PID: 1, Cmdline: []string{"loop"}, ExitCode: 0})
	bufs := map[uint32][]trace.Event{}
	var err error
	loopEvents(n, step, func(e *trace.Event) {
		b := append(bufs[e.TID], *e)
		if len(b) == 4096 && err == nil {
			err = tw.WriteBatch(e.PID, e.TID, b)
			b = b[:0]
		}
		bufs[e.TID] = b
	})
	for tid := uint32(1); tid <= 2 && err == nil; tid++ {
		tw.AddThread(trace.Thread{PID: 1, TID: tid})
		err = tw.WriteBatch(1, tid, bufs[tid])
	}
	if err != nil {
		return err
	}
	return tw.Close()
}

// loopEvents calls emit with each event of LoopTrace(n), each thread's in
// time order.
func loopEvents(n int, step trace.StringID, emit func(*trace.Event)) {
	add := func(e trace.Event) {
		if e.Device == 0 && e.Kind == trace.KindCall && e.API != trace.APIDevicePrimaryCtxRetain {
			e.Device = trace.NoDevice
		}
		emit(&e)
	}
	for tid := uint32(1); tid <= 2; tid++ {
		add(trace.Event{Kind: trace.KindCall, API: trace.APIDevicePrimaryCtxRetain, PID: 1, TID: tid, Device: 0, Start: 0, End: 100, Handle: 0xc0})
		add(trace.Event{Kind: trace.KindCall, API: trace.APICtxSetCurrent, PID: 1, TID: tid, Start: 100, End: 130, Handle: 0xc0})
	}
	ts := int64(1000)
	for i := 0; i < n; i++ {
		tid := uint32(1 + i%2)
		s := uint64(0x10 + i%8)
		a := uint64(0x7000000 + (i%16)*0x1000)
		call := func(api trace.API, d int64, h, stream, size uint64) {
			add(trace.Event{Kind: trace.KindCall, API: api, PID: 1, TID: tid, Start: ts, End: ts + d, Handle: h,
				Stream: stream, Size: size, Caller: 0x401000 + uint64(api)})
			ts += d + 40
		}
		add(trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Start: ts, End: ts, Name: step, Device: trace.NoDevice})
		ts += 20
		call(trace.APICtxGetCurrent, 14, 0xc0, 0, 0)
		call(trace.APIStreamCreate, 4000, s, 0, 0)
		call(trace.APIMemAllocAsync, 700, a, s, 4096)
		call(trace.APILaunchKernel, 2500, 0xf0, s, 0)
		call(trace.APIMemFreeAsync, 600, a, s, 0)
		call(trace.APIStreamSynchronize, 3000, s, s, 0)
		call(trace.APIStreamDestroy, 3000, s, 0, 0)
		add(trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Start: ts, End: ts, Device: trace.NoDevice})
		ts += 20
	}
}
