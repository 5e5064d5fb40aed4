package tracetest

import (
	"math/rand/v2"

	"github.com/cuprof/cuprof/trace"
)

// Random builds a random but plausible trace from seed, about n events over
// two processes of two threads each: contexts created, pushed, popped, set
// and destroyed with objects still in them; primary contexts retained and
// released; streams, events, modules, pools and device, host and managed
// allocations made and ended (managed ones by cuMemFree), some never ended,
// some handles reused; graphs captured and made, instantiated, launched,
// updated and destroyed; physical memory mapped and unmapped; libraries
// loaded with their kernels and functions and unloaded; host registrations
// and IPC handles; failed calls and NOT_READY queries; NVTX push/pop
// ranges, start/end ranges ended on another thread, cudawrap spans and
// Python frames nested around the calls; calls with and without a recorded
// device. The same seed gives the same trace. It is for the consumers'
// agreement tests: every rule of package analysis gets exercised.
func Random(seed uint64, n int) *trace.Trace {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	st := trace.NewStringTable()
	t := &trace.Trace{Meta: trace.Meta{Capture: "random", Overhead: trace.Overhead{InsideNs: 7, AddedNs: 19, PyEventNs: 11}}}
	t.Code = []trace.Code{{}}
	for _, name := range []string{"main", "Stream.__init__", "Buffer.allocate", "handle_return", "CFuncPtr cuLaunchKernel"} {
		kind := trace.CodePython
		if name[0] == 'C' {
			kind = trace.CodeNative
		}
		t.Code = append(t.Code, trace.Code{Kind: kind, Name: st.ID(name), Module: st.ID("mod")})
	}
	rangeNames := []trace.StringID{st.ID("step"), st.ID("inner"), st.ID("io"), st.ID("")}
	domain := st.ID("app")
	g := &randomTrace{r: r, t: t, names: rangeNames, domain: domain, handle: 0x1000}
	for pid := uint32(1); pid <= 2; pid++ {
		t.Processes = append(t.Processes, trace.Process{PID: pid, Cmdline: []string{"random"}, ExitCode: 0})
		for tid := pid * 10; tid < pid*10+2; tid++ {
			t.Threads = append(t.Threads, trace.Thread{PID: pid, TID: tid, Name: "t"})
			g.thread(pid, tid, n/4)
		}
	}
	// start/end ranges, some ended on the other thread of the process, some never
	for i := 0; i < n/40+1; i++ {
		pid := uint32(1 + r.IntN(2))
		tid := pid*10 + uint32(r.IntN(2))
		start := int64(r.IntN(int(g.maxT) + 1))
		id := uint64(100 + i)
		t.Events = append(t.Events, trace.Event{Kind: trace.KindRangeStart, PID: pid, TID: tid, Device: trace.NoDevice,
			Start: start, End: start, ID: id, Name: rangeNames[r.IntN(len(rangeNames))], Domain: domain})
		if r.IntN(5) > 0 {
			end := start + int64(r.IntN(20000))
			etid := pid*10 + uint32(r.IntN(2))
			t.Events = append(t.Events, trace.Event{Kind: trace.KindRangeEnd, PID: pid, TID: etid, Device: trace.NoDevice,
				Start: end, End: end, ID: id})
		}
	}
	t.Strings = st.Strings
	trace.SortEvents(t.Events)
	return t
}

type randomTrace struct {
	r      *rand.Rand
	t      *trace.Trace
	names  []trace.StringID
	domain trace.StringID
	handle uint64
	maxT   int64
	// per thread while generating
	pid, tid uint32
	now      int64
	live     map[trace.Object][]uint64
	contexts []uint64
	pushes   int
	budget   int
}

// thread generates about budget events on one thread.
func (g *randomTrace) thread(pid, tid uint32, budget int) {
	g.pid, g.tid, g.now, g.budget = pid, tid, int64(g.r.IntN(1000)), budget
	g.live = map[trace.Object][]uint64{}
	g.contexts, g.pushes = nil, 0
	g.call(trace.APIDevicePrimaryCtxRetain, 0xc0+uint64(pid), int32(g.r.IntN(2)), trace.Success)
	for g.budget > 0 {
		g.block(0)
	}
	for ; g.pushes > 0; g.pushes-- {
		if g.r.IntN(3) > 0 { // some ranges stay open
			g.mark(trace.KindRangePop, 0)
		}
	}
	g.maxT = max(g.maxT, g.now)
}

// block emits a few steps, some of them nested in a span or frame (written
// once complete, as the capture does).
func (g *randomTrace) block(depth int) {
	for k := 1 + g.r.IntN(4); k > 0 && g.budget > 0; k-- {
		switch x := g.r.IntN(10); {
		case x < 2 && depth < 4:
			start := g.now
			g.now += int64(g.r.IntN(50))
			i := len(g.t.Events)
			g.t.Events = append(g.t.Events, trace.Event{}) // placeholder, filled at the end
			g.block(depth + 1)
			g.now += int64(g.r.IntN(50))
			e := trace.Event{PID: g.pid, TID: g.tid, Device: trace.NoDevice, Start: start, End: g.now}
			if x == 0 {
				e.Kind, e.Name, e.Domain = trace.KindSpan, g.names[g.r.IntN(len(g.names))], g.domain
			} else {
				e.Kind, e.Code = trace.KindFrame, trace.CodeID(1+g.r.IntN(len(g.t.Code)-1))
				if g.r.IntN(8) == 0 {
					e.Flags = trace.FrameUnwound
				}
			}
			g.t.Events[i] = e
			g.budget--
		case x == 2:
			if g.pushes > 0 && g.r.IntN(2) == 0 {
				g.mark(trace.KindRangePop, 0)
				g.pushes--
			} else {
				g.mark(trace.KindRangePush, g.names[g.r.IntN(len(g.names))])
				g.pushes++
			}
		default:
			g.step()
		}
	}
}

func (g *randomTrace) mark(kind trace.Kind, name trace.StringID) {
	g.t.Events = append(g.t.Events, trace.Event{Kind: kind, PID: g.pid, TID: g.tid, Device: trace.NoDevice,
		Start: g.now, End: g.now, Name: name, Domain: g.domain})
	g.now += 5 + int64(g.r.IntN(30))
	g.budget--
}

func (g *randomTrace) call(api trace.API, h uint64, dev int32, res trace.Result) *trace.Event {
	d := int64(5 + g.r.IntN(500))
	g.t.Events = append(g.t.Events, trace.Event{Kind: trace.KindCall, API: api, PID: g.pid, TID: g.tid, Device: dev,
		Start: g.now, End: g.now + d, Handle: h, Result: res, Caller: 0x401000 + uint64(g.r.IntN(4))*0x10})
	g.now += d + int64(g.r.IntN(40))
	g.budget--
	return &g.t.Events[len(g.t.Events)-1]
}

// newHandle returns a fresh handle, or now and then one of a live object
// of kind (a handle reused without a recorded destroy).
func (g *randomTrace) newHandle(kind trace.Object) uint64 {
	if l := g.live[kind]; len(l) > 0 && g.r.IntN(15) == 0 {
		return l[g.r.IntN(len(l))]
	}
	g.handle += 0x10
	return g.handle
}

func (g *randomTrace) take(kind trace.Object) (uint64, bool) {
	l := g.live[kind]
	if len(l) == 0 {
		return 0, false
	}
	j := g.r.IntN(len(l))
	h := l[j]
	g.live[kind] = append(l[:j], l[j+1:]...)
	return h, true
}

func (g *randomTrace) pick(kind trace.Object) uint64 {
	if l := g.live[kind]; len(l) > 0 {
		return l[g.r.IntN(len(l))]
	}
	return 0
}

// step emits one call (or a short sequence) on the current thread.
func (g *randomTrace) step() {
	r := g.r
	dev := trace.NoDevice
	if r.IntN(6) == 0 {
		dev = int32(r.IntN(2))
	}
	res := trace.Success
	if r.IntN(25) == 0 {
		res = trace.ErrInvalidValue
	}
	create := func(api trace.API, kind trace.Object, size uint64) *trace.Event {
		h := g.newHandle(kind)
		e := g.call(api, h, dev, res)
		e.Size = size
		if res.OK() {
			g.live[kind] = append(g.live[kind], h)
		}
		return e
	}
	destroy := func(api trace.API, kind trace.Object) {
		if h, ok := g.take(kind); ok {
			g.call(api, h, dev, res)
		} else {
			g.call(api, 0xdead0, dev, res) // an object never seen created
		}
	}
	switch r.IntN(24) {
	case 0:
		e := create(trace.APICtxCreate, trace.ObjectContext, 0)
		e.Device = int32(r.IntN(2))
		if res.OK() {
			g.contexts = append(g.contexts, e.Handle)
		}
	case 1:
		if len(g.contexts) > 0 {
			j := r.IntN(len(g.contexts))
			h := g.contexts[j]
			g.contexts = append(g.contexts[:j], g.contexts[j+1:]...)
			for k, x := range g.live[trace.ObjectContext] {
				if x == h {
					g.live[trace.ObjectContext] = append(g.live[trace.ObjectContext][:k], g.live[trace.ObjectContext][k+1:]...)
					break
				}
			}
			g.call(trace.APICtxDestroy, h, trace.NoDevice, trace.Success)
		}
	case 2:
		h := 0xc0 + uint64(g.pid)
		if len(g.contexts) > 0 && r.IntN(2) == 0 {
			h = g.contexts[r.IntN(len(g.contexts))]
		}
		if r.IntN(10) == 0 {
			h = 0
		}
		g.call(trace.APICtxSetCurrent, h, trace.NoDevice, trace.Success)
	case 3:
		h := 0xc0 + uint64(g.pid)
		if len(g.contexts) > 0 {
			h = g.contexts[r.IntN(len(g.contexts))]
		}
		g.call(trace.APICtxPushCurrent, h, trace.NoDevice, trace.Success)
		g.step()
		g.call(trace.APICtxPopCurrent, h, trace.NoDevice, trace.Success)
	case 4:
		g.call(trace.APIDevicePrimaryCtxRetain, 0xc0+uint64(g.pid), int32(r.IntN(2)), trace.Success)
	case 5:
		g.call(trace.APIDevicePrimaryCtxRelease, 0, int32(r.IntN(2)), trace.Success)
	case 6, 7:
		create(trace.APIStreamCreate, trace.ObjectStream, 0)
	case 8:
		destroy(trace.APIStreamDestroy, trace.ObjectStream)
	case 9:
		create(trace.APIEventCreate, trace.ObjectEvent, 0)
	case 10:
		destroy(trace.APIEventDestroy, trace.ObjectEvent)
	case 11:
		create(trace.APIMemAlloc, trace.ObjectAllocation, uint64(256<<r.IntN(8)))
	case 12:
		destroy(trace.APIMemFree, trace.ObjectAllocation)
	case 13:
		create(trace.APIMemAllocManaged, trace.ObjectManagedAllocation, 4096)
	case 14:
		// managed memory is freed with cuMemFree
		if h, ok := g.take(trace.ObjectManagedAllocation); ok {
			g.call(trace.APIMemFree, h, dev, res)
		}
	case 15:
		create(trace.APIMemAllocHost, trace.ObjectHostAllocation, 1<<20)
	case 16:
		destroy(trace.APIMemFreeHost, trace.ObjectHostAllocation)
	case 17:
		e := create(trace.APIMemAllocAsync, trace.ObjectAllocation, 1024)
		e.Stream = g.pick(trace.ObjectStream)
	case 18:
		e := create(trace.APIMemPoolCreate, trace.ObjectPool, 0)
		_ = e
	case 19:
		if p := g.pick(trace.ObjectPool); p != 0 {
			e := create(trace.APIMemAllocFromPoolAsync, trace.ObjectAllocation, 512)
			e.Aux, e.Stream = p, g.pick(trace.ObjectStream)
		}
	case 20:
		e := g.call(trace.APIStreamQuery, g.pick(trace.ObjectStream), dev, trace.ErrNotReady)
		e.Stream = e.Handle
	case 21:
		e := g.call(trace.APILaunchKernel, 0xf0, dev, res)
		e.Stream = g.pick(trace.ObjectStream)
	case 22:
		e := g.call(trace.APIStreamSynchronize, g.pick(trace.ObjectStream), dev, res)
		e.Stream = e.Handle
	default:
		if r.IntN(4) == 0 {
			create(trace.APIModuleLoadData, trace.ObjectModule, 0)
		} else {
			for k := 1 + r.IntN(3); k > 0; k-- {
				g.families(dev, res, create, destroy)
			}
		}
	}
}

// families emits a call of the graph, capture, virtual-memory, library,
// host-registration or IPC families, on live objects where it needs them.
func (g *randomTrace) families(dev int32, res trace.Result, create func(trace.API, trace.Object, uint64) *trace.Event,
	destroy func(trace.API, trace.Object)) {
	const granule = 2 << 20
	r := g.r
	switch r.IntN(13) {
	case 0:
		if s := g.pick(trace.ObjectStream); s != 0 {
			e := g.call(trace.APIStreamBeginCapture, s, dev, res)
			e.Stream = s
			if res.OK() {
				g.live[trace.ObjectCapture] = append(g.live[trace.ObjectCapture], s)
			}
		}
	case 1:
		if s, ok := g.take(trace.ObjectCapture); ok {
			e := create(trace.APIStreamEndCapture, trace.ObjectGraph, 0)
			e.Stream, e.Aux = s, s
		}
	case 2:
		create(trace.APIGraphCreate, trace.ObjectGraph, 0)
	case 3:
		if gr := g.pick(trace.ObjectGraph); gr != 0 {
			create(trace.APIGraphInstantiateWithFlags, trace.ObjectGraphExec, 0).Aux = gr
		}
	case 4:
		e := g.call(trace.APIGraphLaunch, g.pick(trace.ObjectGraphExec), dev, res)
		e.Stream = g.pick(trace.ObjectStream)
	case 5:
		e := g.call(trace.APIGraphExecUpdate, g.pick(trace.ObjectGraphExec), dev, res)
		e.Aux = g.pick(trace.ObjectGraph)
	case 6:
		destroy(trace.APIGraphExecDestroy, trace.ObjectGraphExec)
	case 7:
		destroy(trace.APIGraphDestroy, trace.ObjectGraph)
	case 8:
		ph := create(trace.APIMemCreate, trace.ObjectPhysicalMemory, granule).Handle
		create(trace.APIMemMap, trace.ObjectMapping, granule).Aux = ph
	case 9:
		if h, ok := g.take(trace.ObjectMapping); ok {
			g.call(trace.APIMemUnmap, h, dev, res).Size = granule
		}
		destroy(trace.APIMemRelease, trace.ObjectPhysicalMemory)
	case 10:
		lib := create(trace.APILibraryLoadData, trace.ObjectLibrary, 0).Handle
		k := create(trace.APILibraryGetKernel, trace.ObjectKernel, 0)
		k.Aux = lib
		create(trace.APIKernelGetFunction, trace.ObjectFunction, 0).Aux = k.Handle
	case 11:
		destroy(trace.APILibraryUnload, trace.ObjectLibrary)
	default:
		if r.IntN(2) == 0 {
			create(trace.APIMemHostRegister, trace.ObjectHostRegistration, 4096)
			destroy(trace.APIMemHostUnregister, trace.ObjectHostRegistration)
		} else {
			create(trace.APIIpcOpenMemHandle, trace.ObjectIPCMemory, 0)
			destroy(trace.APIIpcCloseMemHandle, trace.ObjectIPCMemory)
		}
	}
}
