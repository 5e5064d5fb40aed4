package lint

import (
	"fmt"
	"github.com/cuprof/cuprof/analysis"
	"math"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/trace"
)

// FallbackIdleSyncNs is the idle synchronize cost assumed when a trace has
// no idle synchronize to measure: about what an idle cuCtxSynchronize costs on
// an H200 (368-880 ns measured).
const FallbackIdleSyncNs = 1000

// Facts is what every rule reads: the trace and its analysis (package
// analysis: devices, context stacks, object lifecycles, range paths, Python
// stacks, costs), built once.
type Facts struct {
	Trace    *trace.Trace
	Analysis *analysis.Analysis
	// Inside is subtracted from every call's duration (the profiler's
	// calibrated in-call cost), each clamped at 0.
	Inside int64
	// Syncs are the synchronize calls (category sync) that succeeded, in
	// trace order.
	Syncs []Sync
	// IdleSyncNs is the median duration of the idle synchronizes (see Sync),
	// or FallbackIdleSyncNs when there are none (IdleMeasured false).
	IdleSyncNs   int64
	IdleMeasured bool
	// ByDestroy and ByCreate map the index of a destroy or create call to
	// the object it ended or made.
	ByDestroy map[int]*analysis.Object
	ByCreate  map[int]*analysis.Object
	// TrimPoints are the calls at which a pool returned its free memory to
	// the OS, in trace order (see trims.go).
	TrimPoints []TrimPoint

	first  int64
	trimNs map[int]int64 // trimming excess per event (TrimPoints and regrowths)
	// what the analysis resolved per event
	devices []int32
	paths   []analysis.PathID
	stacks  []analysis.FrameID
	context map[int]uint64 // context calls: the context current before them
	threads map[[2]uint32]string
	symbols map[uint32][]trace.Symbol // sorted by Addr
}

// Sync is one synchronize call.
type Sync struct {
	Event int
	// Idle is set when no asynchronous work (launches, async copies and
	// memsets, stream-ordered allocations and frees, event records, stream
	// waits, device-to-device copies) was issued in the process since the
	// last synchronize that covered it: for cuCtxSynchronize and default-
	// stream synchronizes, nothing on the device; for cuStreamSynchronize,
	// nothing on that stream, the default stream, or a stream the trace
	// does not name; for cuEventSynchronize, no record of the event since it
	// was last synchronized.
	Idle bool
	// Trimmed is set when the synchronize returned a pool's free memory to
	// the OS (it is then one of TrimPoints).
	Trimmed bool
}

// NewFacts analyses t; it does not modify t.
func NewFacts(t *trace.Trace) *Facts {
	f := &Facts{Trace: t, ByDestroy: map[int]*analysis.Object{}, ByCreate: map[int]*analysis.Object{},
		threads: map[[2]uint32]string{}, symbols: map[uint32][]trace.Symbol{}, first: math.MaxInt64,
		devices: make([]int32, len(t.Events)), paths: make([]analysis.PathID, len(t.Events)),
		stacks: make([]analysis.FrameID, len(t.Events)), context: map[int]uint64{}}
	f.Analysis = analysis.Of(t, analysis.OnEvent(func(e *analysis.Event) {
		f.devices[e.Index], f.paths[e.Index], f.stacks[e.Index] = e.Device, e.Path, e.Frame
		if e.Kind == trace.KindCall && e.API.Info().Category == trace.CategoryContext {
			f.context[e.Index] = e.Context
		}
	}))
	f.Inside = f.Analysis.Cost.InsideNs
	for i := range f.Analysis.Objects {
		o := &f.Analysis.Objects[i]
		if o.Destroy >= 0 {
			f.ByDestroy[o.Destroy] = o
		}
		f.ByCreate[o.Create] = o
	}
	for _, th := range t.Threads {
		f.threads[[2]uint32{th.PID, th.TID}] = th.Name
	}
	for _, s := range t.Symbols {
		f.symbols[s.PID] = append(f.symbols[s.PID], s)
	}
	for _, ss := range f.symbols {
		sort.Slice(ss, func(i, j int) bool { return ss[i].Addr < ss[j].Addr })
	}
	if len(t.Events) > 0 {
		f.first = t.Events[0].Start
	}
	f.findSyncs()
	return f
}

// CallNs returns call i's duration less the profiler's in-call cost.
func (f *Facts) CallNs(i int) int64 { return f.Analysis.Cost.Call(&f.Trace.Events[i]) }

// Device returns the device of event i: recorded, or attributed by the
// analysis.
func (f *Facts) Device(i int) int32 { return f.devices[i] }

// Context returns the context current on the thread of context call i
// before it (0 when none, or when i is not a context call).
func (f *Facts) Context(i int) uint64 { return f.context[i] }

// Stack returns the Python stack around event i, outermost first, joined by
// " > "; "" when none.
func (f *Facts) Stack(i int) string { return f.stackString(f.stacks[i]) }

func (f *Facts) stackString(s analysis.FrameID) string {
	if s == analysis.NoFrame {
		return ""
	}
	var names []string
	for _, c := range f.Analysis.FrameStack(s) {
		names = append(names, f.codeName(c))
	}
	return strings.Join(names, " > ")
}

// codeName returns the qualified name of a piece of Python-level code.
func (f *Facts) codeName(c trace.CodeID) string {
	if int(c) < len(f.Trace.Code) {
		if n := f.Trace.String(f.Trace.Code[c].Name); n != "" {
			return n
		}
	}
	return fmt.Sprintf("(code %d)", c)
}

// OwnNs is CallNs less the time pool-trim attributes to trimming (for a
// trimming call or a regrowth allocation), so rules do not count it twice.
func (f *Facts) OwnNs(i int) int64 { return f.CallNs(i) - f.trimNs[i] }

// Where describes the site of event i.
func (f *Facts) Where(i int) Where {
	e := &f.Trace.Events[i]
	w := Where{Range: f.Analysis.PathString(f.paths[i]), Python: f.Stack(i), PID: e.PID, TID: e.TID,
		Thread: f.threads[[2]uint32{e.PID, e.TID}]}
	if e.Caller != 0 {
		w.Caller = fmt.Sprintf("%#x", e.Caller)
		w.Function = f.symbolize(e.PID, e.Caller)
	}
	return w
}

func (f *Facts) symbolize(pid uint32, addr uint64) string {
	ss := f.symbols[pid]
	j := sort.Search(len(ss), func(j int) bool { return ss[j].Addr > addr }) - 1
	if j < 0 || addr-ss[j].Addr >= max(ss[j].Size, 1) {
		return ""
	}
	if off := addr - ss[j].Addr; off > 0 {
		return fmt.Sprintf("%s+%#x", ss[j].Name, off)
	}
	return ss[j].Name
}

// Example describes call i as an example of a finding.
func (f *Facts) Example(i int) Example {
	e := &f.Trace.Events[i]
	return Example{Event: i, TimeNs: e.Start, OffsetNs: e.Start - f.first, API: e.API.String(), DurationNs: f.CallNs(i)}
}

// Site groups events by where they come from: process, caller address,
// enclosing range path and Python stack (the caller alone is ambiguous
// across ranges and Python callers, and absent from traces recorded without
// return addresses).
type Site struct {
	PID    uint32
	Caller uint64
	Range  string
	Python analysis.FrameID
}

// SiteOf returns the site of event i.
func (f *Facts) SiteOf(i int) Site {
	e := &f.Trace.Events[i]
	return Site{e.PID, e.Caller, f.Analysis.PathString(f.paths[i]), f.stacks[i]}
}

// finding fills the common fields of a finding from its first and example
// events.
func (f *Facts) finding(rule string, sev Severity, first, example int) Finding {
	return Finding{Rule: rule, Severity: sev, Where: f.Where(first), Example: f.Example(example)}
}

// groups collects event indexes under comparable keys, remembering the
// order keys were first seen so output is deterministic.
type groups[K comparable] struct {
	order []K
	by    map[K][]int
}

func newGroups[K comparable]() *groups[K] { return &groups[K]{by: map[K][]int{}} }

func (g *groups[K]) add(k K, i int) {
	if _, ok := g.by[k]; !ok {
		g.order = append(g.order, k)
	}
	g.by[k] = append(g.by[k], i)
}

// isAsyncWork reports whether a call queues work that a later synchronize
// waits for.
func isAsyncWork(api trace.API) bool {
	switch api {
	case trace.APILaunchKernel, trace.APILaunchKernelEx,
		trace.APIMemcpyAsync, trace.APIMemcpyHtoDAsync, trace.APIMemcpyDtoHAsync, trace.APIMemcpyDtoDAsync,
		trace.APIMemsetD8Async, trace.APIMemsetD32Async, trace.APIMemcpy, trace.APIMemcpyDtoD,
		trace.APIMemsetD8, trace.APIMemsetD32,
		trace.APIMemAllocAsync, trace.APIMemAllocFromPoolAsync, trace.APIMemFreeAsync,
		trace.APIEventRecord, trace.APIEventRecordWithFlags, trace.APIStreamWaitEvent:
		return true
	}
	return false
}

// unknownStream marks work whose stream the trace does not record.
const unknownStream = math.MaxUint64

func streamOf(e *trace.Event) uint64 {
	switch {
	case e.API == trace.APILaunchKernelEx:
		return unknownStream
	case e.Stream <= 2:
		return 0 // NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
	}
	return e.Stream
}

type pendingKey struct {
	dev    int32
	stream uint64
}

// findSyncs lists the synchronizes, decides which were idle, measures the
// idle synchronize, and finds where pools were trimmed (see trims.go).
// Synchronizes that may have trimmed a pool are left out of the idle median.
func (f *Facts) findSyncs() {
	t := f.Trace
	pending := map[uint32]map[pendingKey]int{}
	recorded := map[[2]uint64]bool{} // (pid, event) recorded since its last synchronize
	tt := newTrimTracker(f)
	var idle []int64
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall || !e.Result.OK() {
			continue
		}
		p := pending[e.PID]
		if p == nil {
			p = map[pendingKey]int{}
			pending[e.PID] = p
		}
		candidate := tt.step(i, e)
		if isAsyncWork(e.API) {
			p[pendingKey{f.devices[i], streamOf(e)}]++
			if e.API == trace.APIEventRecord || e.API == trace.APIEventRecordWithFlags {
				recorded[[2]uint64{uint64(e.PID), e.Handle}] = true
			}
			continue
		}
		if e.API.Info().Category != trace.CategorySync {
			continue
		}
		s := Sync{Event: i, Idle: true}
		switch {
		case e.API == trace.APIEventSynchronize:
			k := [2]uint64{uint64(e.PID), e.Handle}
			s.Idle = !recorded[k]
			delete(recorded, k)
		case e.API == trace.APIStreamSynchronize && streamOf(e) != 0:
			st := streamOf(e)
			for k, n := range p {
				if n > 0 && covers(f.devices[i], k.dev) && (k.stream == st || k.stream == 0 || k.stream == unknownStream) {
					s.Idle = false
				}
			}
			for k := range p {
				if k.stream == st {
					delete(p, k)
				}
			}
		default: // cuCtxSynchronize, default-stream synchronize
			for k, n := range p {
				if n > 0 && covers(f.devices[i], k.dev) {
					s.Idle = false
				}
			}
			for k := range p {
				if covers(f.devices[i], k.dev) && (e.API == trace.APICtxSynchronize || k.stream == 0 || k.stream == unknownStream) {
					delete(p, k)
				}
			}
		}
		f.Syncs = append(f.Syncs, s)
		if s.Idle && !candidate {
			idle = append(idle, f.CallNs(i))
		}
	}
	f.IdleSyncNs = FallbackIdleSyncNs
	if len(idle) > 0 {
		sortInt64(idle)
		f.IdleSyncNs = analysis.Percentile(idle, 50)
		f.IdleMeasured = true
	}
	tt.confirm()
}

// covers reports whether a call on device call reaches work on device dev
// (an unknown device on either side covers everything).
func covers(call, dev int32) bool {
	return call == trace.NoDevice || dev == trace.NoDevice || dev == call
}

func sortInt64(xs []int64) { sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] }) }
