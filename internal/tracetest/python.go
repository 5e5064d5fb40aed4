package tracetest

import "github.com/cuprof/cuprof/trace"

// PythonTrace is a small recording of a Python program that drives CUDA
// through a pure-Python wrapper, for the consumers' Python-frame tests:
//
// thread 100 (main), all well nested:
//
//	<module> bench.py:1                      0 .. 100000
//	  cuDevicePrimaryCtxRetain (ctx 0xc0)    500 .. 900
//	  main bench.py:10                       1000 .. 90000
//	    push "step"                          2000 .. 80000
//	      Device.create_stream _device.py:120   3000 .. 20000
//	        StreamOptions.__init__ _stream.py:40  3500 .. 5000   (no driver call under it)
//	        CFuncPtr cuStreamCreate (native)      6000 .. 9000
//	          cuStreamCreate (stream 0x10)          6500 .. 8500
//	        handle_return _utils.py:55            9500 .. 10500
//	        finalize.__init__ weakref.py:560      11000 .. 15000
//	      Buffer.allocate _memory.py:200        21000 .. 30000  unwound (an exception)
//	        cuMemAllocAsync (0xa000, 4096 B)      22000 .. 26000
//	        handle_return _utils.py:55            27000 .. 28000  unwound
//	      gen bench.py:30                       31000 .. 32000  yielded
//	        cuMemAlloc (0xb000, 1024 B)           31200 .. 31800
//	      gen bench.py:30                       33000 .. 34000  (resumed, returns)
//	        cuMemFree (0xb000)                    33200 .. 33600
//	      cuMemAlloc fails (out of memory)      40000 .. 40100
//	    pop                                  80000
//	  cuStreamDestroy (0x10)                 95000 .. 96000
//
// thread 101 (worker): worker bench.py:50 from 5000, still running when the
// interpreter stopped being recorded (FrameOpen, End 60000), around
// cuStreamSynchronize 50000 .. 59000 and cuMemAlloc 59100 .. 59500 of 0xc000
// (8192 B, never freed: alive at the end).
//
// Meta.Overhead: 10 ns per driver call, 20 ns per Python event.
func PythonTrace() *trace.Trace {
	st := trace.NewStringTable()
	t := &trace.Trace{Meta: trace.Meta{Host: "node1", Capture: "shim", Command: []string{"python3", "bench.py"},
		Overhead: trace.Overhead{InsideNs: 10, AddedNs: 30, PyEventNs: 20}}}
	t.Processes = []trace.Process{{PID: 100, PPID: 1, Exe: "/usr/bin/python3", Cmdline: []string{"python3", "bench.py"},
		Start: 0, End: 100000, ExitCode: 0, Python: "CPython 3.12.1, sys.monitoring, full"}}
	t.Threads = []trace.Thread{{PID: 100, TID: 100, Name: "python3"}, {PID: 100, TID: 101, Name: "worker"}}
	t.Code = []trace.Code{{}}
	code := func(kind trace.CodeKind, name, module, file string, line uint32) trace.CodeID {
		t.Code = append(t.Code, trace.Code{Kind: kind, Name: st.ID(name), Module: st.ID(module), File: st.ID(file), Line: line})
		return trace.CodeID(len(t.Code) - 1)
	}
	py := func(name, module, file string, line uint32) trace.CodeID {
		return code(trace.CodePython, name, module, file, line)
	}
	module := py("<module>", "__main__", "bench.py", 1)
	mainFn := py("main", "__main__", "bench.py", 10)
	createStream := py("Device.create_stream", "cuda.core._device", "cuda/core/_device.py", 120)
	options := py("StreamOptions.__init__", "cuda.core._stream", "cuda/core/_stream.py", 40)
	cfunc := code(trace.CodeNative, "CFuncPtr cuStreamCreate", "_ctypes", "", 0)
	handleReturn := py("handle_return", "cuda.core._utils", "cuda/core/_utils.py", 55)
	finalize := py("finalize.__init__", "weakref", "/usr/lib/python3.12/weakref.py", 560)
	allocate := py("Buffer.allocate", "cuda.core._memory", "cuda/core/_memory.py", 200)
	gen := py("gen", "__main__", "bench.py", 30)
	worker := py("worker", "__main__", "bench.py", 50)
	step := st.ID("step")

	frame := func(tid uint32, c trace.CodeID, start, end int64, flags uint64) {
		t.Events = append(t.Events, trace.Event{Kind: trace.KindFrame, PID: 100, TID: tid, Device: trace.NoDevice,
			Start: start, End: end, Code: c, Flags: flags})
	}
	call := func(tid uint32, api trace.API, start, end int64, e trace.Event) {
		e.Kind, e.API, e.PID, e.TID, e.Start, e.End = trace.KindCall, api, 100, tid, start, end
		if e.Device == 0 && api != trace.APIDevicePrimaryCtxRetain {
			e.Device = trace.NoDevice // left for device attribution
		}
		t.Events = append(t.Events, e)
	}
	frame(100, module, 0, 100000, 0)
	call(100, trace.APIDevicePrimaryCtxRetain, 500, 900, trace.Event{Handle: 0xc0})
	call(100, trace.APICtxSetCurrent, 950, 980, trace.Event{Handle: 0xc0})
	frame(100, mainFn, 1000, 90000, 0)
	t.Events = append(t.Events, trace.Event{Kind: trace.KindRangePush, PID: 100, TID: 100, Device: trace.NoDevice,
		Start: 2000, End: 2000, Name: step})
	frame(100, createStream, 3000, 20000, 0)
	frame(100, options, 3500, 5000, 0)
	frame(100, cfunc, 6000, 9000, 0)
	call(100, trace.APIStreamCreate, 6500, 8500, trace.Event{Handle: 0x10})
	frame(100, handleReturn, 9500, 10500, 0)
	frame(100, finalize, 11000, 15000, 0)
	frame(100, allocate, 21000, 30000, trace.FrameUnwound)
	call(100, trace.APIMemAllocAsync, 22000, 26000, trace.Event{Handle: 0xa000, Stream: 0x10, Size: 4096})
	frame(100, handleReturn, 27000, 28000, trace.FrameUnwound)
	frame(100, gen, 31000, 32000, trace.FrameYielded)
	call(100, trace.APIMemAlloc, 31200, 31800, trace.Event{Handle: 0xb000, Size: 1024})
	frame(100, gen, 33000, 34000, 0)
	call(100, trace.APIMemFree, 33200, 33600, trace.Event{Handle: 0xb000})
	call(100, trace.APIMemAlloc, 40000, 40100, trace.Event{Result: trace.ErrOutOfMemory, Size: 1 << 40})
	t.Events = append(t.Events, trace.Event{Kind: trace.KindRangePop, PID: 100, TID: 100, Device: trace.NoDevice,
		Start: 80000, End: 80000})
	call(100, trace.APIStreamDestroy, 95000, 96000, trace.Event{Handle: 0x10})

	call(101, trace.APICtxSetCurrent, 4000, 4030, trace.Event{Handle: 0xc0})
	frame(101, worker, 5000, 60000, trace.FrameOpen)
	call(101, trace.APIStreamSynchronize, 50000, 59000, trace.Event{Handle: 0x10, Stream: 0x10})
	call(101, trace.APIMemAlloc, 59100, 59500, trace.Event{Handle: 0xc000, Size: 8192})

	t.Strings = st.Strings
	trace.SortEvents(t.Events)
	return t
}
