package tracetest

import "github.com/cuprof/cuprof/trace"

// AllocFreePairs builds a trace of n stream-ordered allocate/free pairs, each
// in an NVTX range, on two threads of one process: for the OTLP exporter,
// 5n spans (2n calls, n ranges, n lifetimes, and the process).
func AllocFreePairs(n int) *trace.Trace {
	tr := &trace.Trace{Strings: []string{""}}
	tr.Meta = trace.Meta{Host: "bench", WallStart: 1_700_000_000_000_000_000, Command: []string{"bench"}}
	tr.Processes = []trace.Process{{PID: 1, Cmdline: []string{"bench"}, ExitCode: -1}}
	step := tr.Intern("step")
	var t0 int64 = 1000
	for i := 0; i < n; i++ {
		tid := uint32(1 + i%2)
		h := uint64(0x7f0000000000 + i*0x1000)
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Device: -1, Start: t0, End: t0, Name: step},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemAllocAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 10, End: t0 + 500, Handle: h, Stream: 0x10, Size: 4096, Caller: 0x401000},
			trace.Event{Kind: trace.KindCall, API: trace.APIMemFreeAsync, PID: 1, TID: tid, Device: 0,
				Start: t0 + 600, End: t0 + 700, Handle: h, Stream: 0x10},
			trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Device: -1, Start: t0 + 800, End: t0 + 800},
		)
		t0 += 1000
	}
	trace.SortEvents(tr.Events)
	return tr
}
