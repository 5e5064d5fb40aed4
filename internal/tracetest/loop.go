package tracetest

import "github.com/cuprof/cuprof/trace"

// LoopTrace is a realistic mix of n iterations on two threads: a range, a
// stream made per call, an async allocation and free, a launch, a
// synchronize and the stream's destroy, plus a cheap context query.
func LoopTrace(n int) *trace.Trace {
	st := trace.NewStringTable()
	step := st.ID("step")
	t := &trace.Trace{Meta: trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}}}
	add := func(e trace.Event) {
		if e.Device == 0 && e.Kind == trace.KindCall && e.API != trace.APIDevicePrimaryCtxRetain {
			e.Device = trace.NoDevice
		}
		t.Events = append(t.Events, e)
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
	t.Strings = st.Strings
	trace.SortEvents(t.Events)
	return t
}
