package main

import (
	"fmt"
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// A shape writes about n events through emit, each thread's in time order.
// Shapes besides the loop mix (issue 43): what users record first, and
// what costs the readers most per event.
type shape struct {
	name, about string
	write       func(g *gen, n int)
}

var shapes = []shape{
	{"churn", "allocation churn: one thread; get/set current, cuMemAllocAsync then cuMemFreeAsync of 64 bytes at a new address each time, an error-name lookup, a stream created and destroyed every 4,096 calls", churn},
	{"streams", "stream and event churn: one thread; each iteration creates a stream and an event, records the event, makes the stream wait for it, destroys both (new handles every time)", streamChurn},
	{"live", "many live objects: 1M allocations of 64 bytes made first and kept alive to the end; then cuMemAlloc/cuMemFree pairs and cheap calls", liveObjects},
	{"python", "deep Python stacks: every driver call under 50 Python frames (45 outer frames re-entered every 1,000 iterations, 5 inner ones per iteration)", deepPython},
	{"threads", "1,000 threads of one process taking turns: get current, async alloc, free, synchronize", manyThreads},
	{"procs", "100 processes of 2 threads each taking turns: get current, async alloc, free, synchronize", manyProcs},
	{"deep", "an NVTX range pushed before each call and never popped (stack as deep as the events / 2; a crafted trace: issue 47, item 6)", deepRanges},
	{"names", "every call under an NVTX range of a name of its own (as many distinct names as events / 3; a crafted trace: issue 47, item 6)", distinctNames},
}

func shapeNamed(name string) (*shape, error) {
	for i := range shapes {
		if shapes[i].name == name {
			return &shapes[i], nil
		}
	}
	return nil, fmt.Errorf("no shape %q", name)
}

// gen buffers each thread's events and writes them as batches of 4,096.
type gen struct {
	w       *trace.Writer
	bufs    map[uint64][]trace.Event
	procs   map[uint32]bool
	threads []uint64
	err     error
	ts      int64
	codes   map[string]trace.CodeID
}

func newGen(w *trace.Writer) *gen {
	return &gen{w: w, bufs: map[uint64][]trace.Event{}, procs: map[uint32]bool{}, ts: 1000, codes: map[string]trace.CodeID{}}
}

func (g *gen) emit(e trace.Event) {
	if e.Kind != trace.KindCall || e.API != trace.APIDevicePrimaryCtxRetain {
		e.Device = trace.NoDevice
	}
	if e.End < e.Start {
		e.End = e.Start
	}
	k := uint64(e.PID)<<32 | uint64(e.TID)
	b, ok := g.bufs[k]
	if !ok {
		g.threads = append(g.threads, k)
		if !g.procs[e.PID] {
			g.procs[e.PID] = true
			if err := g.w.AddProcess(trace.Process{PID: e.PID, Cmdline: []string{"gentrace"}}); err != nil && g.err == nil {
				g.err = err
			}
		}
	}
	b = append(b, e)
	if len(b) == 4096 && g.err == nil {
		g.err = g.w.WriteBatch(e.PID, e.TID, b)
		b = b[:0]
	}
	g.bufs[k] = b
}

// call emits a call of d ns on pid/tid at the generator's clock and moves
// the clock past it.
func (g *gen) call(pid, tid uint32, api trace.API, d int64, e trace.Event) {
	e.Kind, e.API, e.PID, e.TID, e.Start, e.End = trace.KindCall, api, pid, tid, g.ts, g.ts+d
	if e.Caller == 0 {
		e.Caller = 0x401000 + uint64(api)
	}
	g.emit(e)
	g.ts += d + 40
}

// setup emits the context a thread's calls run in.
func (g *gen) setup(pid, tid uint32) {
	g.call(pid, tid, trace.APIDevicePrimaryCtxRetain, 100, trace.Event{Handle: 0xc0})
	g.call(pid, tid, trace.APICtxSetCurrent, 30, trace.Event{Handle: 0xc0})
}

func (g *gen) code(w *trace.Writer, name string) trace.CodeID {
	if c, ok := g.codes[name]; ok {
		return c
	}
	c := w.AddCode(trace.Code{Kind: trace.CodePython, Name: w.String(name), Module: w.String("__main__"),
		File: w.String("bench.py"), Line: uint32(len(g.codes) + 1)})
	g.codes[name] = c
	return c
}

func (g *gen) close() error {
	sort.Slice(g.threads, func(i, j int) bool { return g.threads[i] < g.threads[j] })
	for _, k := range g.threads {
		if g.err != nil {
			break
		}
		pid, tid := uint32(k>>32), uint32(k)
		if err := g.w.AddThread(trace.Thread{PID: pid, TID: tid}); err != nil {
			return err
		}
		g.err = g.w.WriteBatch(pid, tid, g.bufs[k])
	}
	if g.err != nil {
		return g.err
	}
	return g.w.Close()
}

func churn(g *gen, n int) {
	g.setup(1, 1)
	for i, made := 0, 0; made < n; i++ {
		if i%(4096/8) == 0 {
			s := uint64(0x100000 + i)
			g.call(1, 1, trace.APIStreamCreate, 4000, trace.Event{Handle: s})
			g.call(1, 1, trace.APIStreamDestroy, 3000, trace.Event{Handle: s})
			made += 2
		}
		a := 0x7f0000000000 + uint64(i)*64
		g.call(1, 1, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
		g.call(1, 1, trace.APICtxSetCurrent, 20, trace.Event{Handle: 0xc0})
		g.call(1, 1, trace.APIMemAllocAsync, 700, trace.Event{Handle: a, Size: 64})
		g.call(1, 1, trace.APIMemFreeAsync, 600, trace.Event{Handle: a})
		g.call(1, 1, trace.APIGetErrorName, 13, trace.Event{Flags: 0})
		made += 5
	}
}

func streamChurn(g *gen, n int) {
	g.setup(1, 1)
	for i := 0; i < n/6; i++ {
		s, ev := uint64(0x100000+2*i), uint64(0x100001+2*i)
		g.call(1, 1, trace.APIStreamCreate, 4000, trace.Event{Handle: s})
		g.call(1, 1, trace.APIEventCreate, 100, trace.Event{Handle: ev})
		g.call(1, 1, trace.APIEventRecord, 200, trace.Event{Handle: ev, Stream: s})
		g.call(1, 1, trace.APIStreamWaitEvent, 150, trace.Event{Handle: s, Stream: s, Aux: ev})
		g.call(1, 1, trace.APIEventDestroy, 70, trace.Event{Handle: ev})
		g.call(1, 1, trace.APIStreamDestroy, 3000, trace.Event{Handle: s})
	}
}

func liveObjects(g *gen, n int) {
	g.setup(1, 1)
	const live = 1_000_000
	for i := 0; i < live && i < n/2; i++ {
		g.call(1, 1, trace.APIMemAlloc, 500, trace.Event{Handle: 0x7f0000000000 + uint64(i)*64, Size: 64})
	}
	for i := 0; i < (n-min(live, n/2))/3; i++ {
		a := 0x7e0000000000 + uint64(i%64)*4096
		g.call(1, 1, trace.APIMemAlloc, 500, trace.Event{Handle: a, Size: 4096})
		g.call(1, 1, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
		g.call(1, 1, trace.APIMemFree, 400, trace.Event{Handle: a})
	}
}

func deepPython(g *gen, n int) {
	g.setup(1, 1)
	const outer, inner, block = 45, 5, 1000
	frame := func(c trace.CodeID, start, end int64) {
		g.emit(trace.Event{Kind: trace.KindFrame, PID: 1, TID: 1, Start: start, End: end, Code: c})
	}
	var outerCodes, innerCodes []trace.CodeID
	for d := range outer {
		outerCodes = append(outerCodes, g.code(g.w, fmt.Sprintf("outer_%d", d)))
	}
	for d := range inner {
		innerCodes = append(innerCodes, g.code(g.w, fmt.Sprintf("inner_%d", d)))
	}
	const perIter = inner + 4
	for it := 0; it < n/perIter; {
		var outerStart [outer]int64
		for d := range outer {
			outerStart[d] = g.ts
			g.ts += 10
		}
		for b := 0; b < block && it < n/perIter; b, it = b+1, it+1 {
			var innerStart [inner]int64
			for d := range inner {
				innerStart[d] = g.ts
				g.ts += 10
			}
			a := 0x7f0000000000 + uint64(it%256)*64
			g.call(1, 1, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
			g.call(1, 1, trace.APIMemAllocAsync, 700, trace.Event{Handle: a, Size: 64})
			g.call(1, 1, trace.APIMemFreeAsync, 600, trace.Event{Handle: a})
			g.call(1, 1, trace.APIGetErrorName, 13, trace.Event{})
			for d := inner - 1; d >= 0; d-- {
				frame(innerCodes[d], innerStart[d], g.ts)
				g.ts += 10
			}
		}
		for d := outer - 1; d >= 0; d-- {
			frame(outerCodes[d], outerStart[d], g.ts)
			g.ts += 10
		}
	}
}

// turns emits n events over threads of pids: each thread in turn makes
// four calls.
func turns(g *gen, n int, pids, tidsPerPID int) {
	for p := range pids {
		for t := range tidsPerPID {
			g.setup(uint32(p+1), uint32(1000*p+t+1))
		}
	}
	for i := 0; i < n/4; i++ {
		th := i % (pids * tidsPerPID)
		pid, tid := uint32(th/tidsPerPID+1), uint32(1000*(th/tidsPerPID)+th%tidsPerPID+1)
		s := uint64(0x10)
		a := 0x7f0000000000 + uint64(th)*4096 + uint64(i%8)*64
		g.call(pid, tid, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
		g.call(pid, tid, trace.APIMemAllocAsync, 700, trace.Event{Handle: a, Stream: s, Size: 64})
		g.call(pid, tid, trace.APIMemFreeAsync, 600, trace.Event{Handle: a, Stream: s})
		g.call(pid, tid, trace.APIStreamSynchronize, 300, trace.Event{Handle: s, Stream: s})
	}
}

func manyThreads(g *gen, n int) { turns(g, n, 1, 1000) }
func manyProcs(g *gen, n int)   { turns(g, n, 100, 2) }

func deepRanges(g *gen, n int) {
	g.setup(1, 1)
	step := g.w.String("step")
	for i := 0; i < n/2; i++ {
		g.emit(trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Start: g.ts, End: g.ts, Name: step})
		g.ts += 20
		g.call(1, 1, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
	}
}

func distinctNames(g *gen, n int) {
	g.setup(1, 1)
	for i := 0; i < n/3; i++ {
		g.emit(trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Start: g.ts, End: g.ts, Name: g.w.String(fmt.Sprintf("step %d", i))})
		g.ts += 20
		g.call(1, 1, trace.APICtxGetCurrent, 14, trace.Event{Handle: 0xc0})
		g.emit(trace.Event{Kind: trace.KindRangePop, PID: 1, TID: 1, Start: g.ts, End: g.ts})
		g.ts += 20
	}
}
