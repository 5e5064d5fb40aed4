package tracetest

import (
	"io"
	"iter"

	"github.com/cuprof/cuprof/trace"
)

// LoopStream is LoopTrace's loop on one thread as a stream of about n
// events in trace order, generated as they are read (one Event reused), with
// the tables it refers to: for measuring what a consumer keeps per event
// when nothing holds the events.
func LoopStream(n int) (*trace.Trace, iter.Seq[*trace.Event]) {
	st := trace.NewStringTable()
	step := st.ID("step")
	t := &trace.Trace{Meta: trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}}, Strings: st.Strings}
	t.Processes = []trace.Process{{PID: 1, Cmdline: []string{"loop"}}}
	events := func(yield func(*trace.Event) bool) {
		var e trace.Event
		emit := func(x trace.Event) bool {
			e = x
			return yield(&e)
		}
		if !emit(trace.Event{Kind: trace.KindCall, API: trace.APIDevicePrimaryCtxRetain, PID: 1, TID: 1, Start: 0, End: 100, Handle: 0xc0}) ||
			!emit(trace.Event{Kind: trace.KindCall, API: trace.APICtxSetCurrent, PID: 1, TID: 1, Device: trace.NoDevice, Start: 100, End: 130, Handle: 0xc0}) {
			return
		}
		ts := int64(1000)
		for i := 0; 9*i < n; i++ {
			s := uint64(0x10 + i%8)
			a := uint64(0x7000000 + (i%16)*0x1000)
			call := func(api trace.API, d int64, h, stream, size uint64) bool {
				ok := emit(trace.Event{Kind: trace.KindCall, API: api, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts,
					End: ts + d, Handle: h, Stream: stream, Size: size, Caller: 0x401000 + uint64(api)})
				ts += d + 40
				return ok
			}
			if !emit(trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts, End: ts, Name: step}) {
				return
			}
			ts += 20
			if !call(trace.APICtxGetCurrent, 14, 0xc0, 0, 0) || !call(trace.APIStreamCreate, 4000, s, 0, 0) ||
				!call(trace.APIMemAllocAsync, 700, a, s, 4096) || !call(trace.APILaunchKernel, 2500, 0xf0, s, 0) ||
				!call(trace.APIMemFreeAsync, 600, a, s, 0) || !call(trace.APIStreamSynchronize, 3000, s, s, 0) ||
				!call(trace.APIStreamDestroy, 3000, s, 0, 0) {
				return
			}
			if !emit(trace.Event{Kind: trace.KindRangePop, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts, End: ts}) {
				return
			}
			ts += 20
		}
	}
	return t, events
}

// ChurnStream is allocation churn on one thread as a stream of about n
// events, generated as they are read: per iteration cuMemAllocAsync of 64
// bytes at an address never used before and its cuMemFreeAsync; every 16
// iterations a get and set of the current context and an error-name
// lookup; every 1,024 a stream created and destroyed (a handle never used
// before). About n/2.2 short-lived allocations, one alive at a time: what a
// consumer keeps per object made, not per object alive, shows as growth.
func ChurnStream(n int) (*trace.Trace, iter.Seq[*trace.Event]) {
	t := &trace.Trace{Meta: trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}}, Strings: []string{""}}
	t.Processes = []trace.Process{{PID: 1, Cmdline: []string{"churn"}}}
	t.Threads = []trace.Thread{{PID: 1, TID: 1, Name: "churn"}}
	events := func(yield func(*trace.Event) bool) {
		var e trace.Event
		ts, k := int64(1000), 0
		call := func(api trace.API, d int64, h, stream, size uint64) bool {
			e = trace.Event{Kind: trace.KindCall, API: api, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts,
				End: ts + d, Handle: h, Stream: stream, Size: size, Caller: 0x401000 + uint64(api)}
			if api == trace.APIDevicePrimaryCtxRetain {
				e.Device = 0
			}
			ts += d + 40
			k++
			return yield(&e)
		}
		if !call(trace.APIDevicePrimaryCtxRetain, 100, 0xc0, 0, 0) || !call(trace.APICtxSetCurrent, 30, 0xc0, 0, 0) {
			return
		}
		for i := 0; k < n; i++ {
			if i%1024 == 0 {
				s := uint64(0x10000000 + i)
				if !call(trace.APIStreamCreate, 4000, s, 0, 0) || !call(trace.APIStreamDestroy, 3000, s, 0, 0) {
					return
				}
			}
			if i%16 == 0 {
				if !call(trace.APICtxGetCurrent, 14, 0xc0, 0, 0) || !call(trace.APICtxSetCurrent, 20, 0xc0, 0, 0) ||
					!call(trace.APIGetErrorName, 13, 0, 0, 0) {
					return
				}
			}
			a := 0x7f0000000000 + uint64(i)*64
			if !call(trace.APIMemAllocAsync, 700, a, 0, 64) || !call(trace.APIMemFreeAsync, 600, a, 0, 0) {
				return
			}
		}
	}
	return t, events
}

// WriteStream writes the tables and the events of a stream (in trace
// order) to w in the binary form, holding one batch of events at a time.
func WriteStream(w io.Writer, tables *trace.Trace, events iter.Seq[*trace.Event]) error {
	tw, err := trace.NewTraceWriter(w, tables)
	if err != nil {
		return err
	}
	for e := range events {
		if err := tw.WriteEvent(e); err != nil {
			return err
		}
	}
	return tw.Close()
}
