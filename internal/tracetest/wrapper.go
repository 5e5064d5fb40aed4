package tracetest

import "github.com/cuprof/cuprof/trace"

// PythonWrapper builds the trace of n iterations of two Python stream
// wrappers on one thread, in the style of the seed reproduction
// (examples/python): a heavy one whose Stream.__init__ builds an options
// object, registers a weakref.finalize and checks the result in Python
// around the ctypes call to cuStreamCreate, and a lean one that calls
// cuStreamCreate and nothing else. Each stream is destroyed again through
// close() 2 ms later. The calibrated costs are InsideNs 10, AddedNs 25 and PyEventNs 30.
func PythonWrapper(n int) *trace.Trace { return pythonWrapper(n, false) }

// PythonWrapperTrimmed is PythonWrapper after a fix to the heavy wrapper,
// for comparing the two: Stream.__init__ registers no weakref.finalize and
// does less itself (700 ns of self time before the costs come out, 300 ns
// after the fix); everything else is as in PythonWrapper.
func PythonWrapperTrimmed(n int) *trace.Trace { return pythonWrapper(n, true) }

func pythonWrapper(n int, trimmed bool) *trace.Trace {
	st := trace.NewStringTable()
	t := &trace.Trace{Meta: trace.Meta{Capture: "sim", Overhead: trace.Overhead{InsideNs: 10, AddedNs: 25, PyEventNs: 30}}}
	t.Processes = []trace.Process{{PID: 7, Cmdline: []string{"python3", "seed.py"}, ExitCode: 0,
		Python: "CPython 3.12.1, sys.monitoring, full"}}
	t.Threads = []trace.Thread{{PID: 7, TID: 7, Name: "python3"}}
	code := func(kind trace.CodeKind, name, module, file string, line uint32) trace.CodeID {
		t.Code = append(t.Code, trace.Code{Kind: kind, Name: st.ID(name), Module: st.ID(module), File: st.ID(file), Line: line})
		return trace.CodeID(len(t.Code) - 1)
	}
	t.Code = []trace.Code{{}}
	const src = "minicore/stream.py"
	var (
		main      = code(trace.CodePython, "main", "__main__", "seed.py", 1)
		heavy     = code(trace.CodePython, "Stream.__init__", "minicore.stream", src, 40)
		options   = code(trace.CodePython, "StreamOptions.__init__", "minicore.stream", src, 12)
		finalize  = code(trace.CodePython, "finalize.__init__", "weakref", "/usr/lib/python3.12/weakref.py", 566)
		check     = code(trace.CodePython, "handle_return", "minicore.errors", "minicore/errors.py", 8)
		create    = code(trace.CodeNative, "CFuncPtr cuStreamCreate", "ctypes", "", 0)
		destroy   = code(trace.CodeNative, "CFuncPtr cuStreamDestroy", "ctypes", "", 0)
		closeCode = code(trace.CodePython, "Stream.close", "minicore.stream", src, 70)
		lean      = code(trace.CodePython, "LeanStream.__init__", "minicore.lean", "minicore/lean.py", 5)
		leanClose = code(trace.CodePython, "LeanStream.close", "minicore.lean", "minicore/lean.py", 11)
	)
	frame := func(c trace.CodeID, start, end int64) {
		t.Events = append(t.Events, trace.Event{Kind: trace.KindFrame, PID: 7, TID: 7, Device: trace.NoDevice,
			Start: start, End: end, Code: c})
	}
	call := func(api trace.API, start, end int64, h uint64) {
		t.Events = append(t.Events, trace.Event{Kind: trace.KindCall, API: api, PID: 7, TID: 7, Device: trace.NoDevice,
			Start: start, End: end, Handle: h, Caller: 0x7f00001000 + uint64(api)})
	}
	t.Events = append(t.Events, trace.Event{Kind: trace.KindCall, API: trace.APIDevicePrimaryCtxRetain, PID: 7, TID: 7,
		Device: 0, Start: 100, End: 1100, Handle: 0xc0})
	call(trace.APICtxSetCurrent, 1200, 1300, 0xc0)
	ts := int64(2000)
	for i := 0; i < n; i++ {
		if trimmed {
			// heavy, fixed: 2.8 us in all, no finalizer
			frame(heavy, ts, ts+2800)
			frame(options, ts+50, ts+650)
			frame(create, ts+700, ts+2100)
			call(trace.APIStreamCreate, ts+800, ts+2000, 0x5000+uint64(i))
			frame(check, ts+2200, ts+2700)
		} else {
			// heavy: 4 us in all, 1.2 us of it in cuStreamCreate
			frame(heavy, ts, ts+4000)
			frame(options, ts+100, ts+700)
			frame(finalize, ts+800, ts+1600)
			frame(create, ts+1700, ts+3100)
			call(trace.APIStreamCreate, ts+1800, ts+3000, 0x5000+uint64(i))
			frame(check, ts+3200, ts+3700)
		}
		ts += 4500
		// lean: 1.6 us, 1.2 us of it in cuStreamCreate
		frame(lean, ts, ts+1600)
		frame(create, ts+100, ts+1500)
		call(trace.APIStreamCreate, ts+200, ts+1400, 0x6000+uint64(i))
		ts += 2000
	}
	// the streams live past 1 ms (not churn), then each is closed
	ts += 2_000_000
	for i := 0; i < n; i++ {
		frame(closeCode, ts, ts+900)
		frame(destroy, ts+100, ts+800)
		call(trace.APIStreamDestroy, ts+200, ts+700, 0x5000+uint64(i))
		ts += 1000
		frame(leanClose, ts, ts+800)
		frame(destroy, ts+100, ts+700)
		call(trace.APIStreamDestroy, ts+200, ts+600, 0x6000+uint64(i))
		ts += 1000
	}
	frame(main, 1500, ts)
	t.Processes[0].Start, t.Processes[0].End = 0, ts+100
	t.Strings = st.Strings
	trace.SortEvents(t.Events)
	return t
}
