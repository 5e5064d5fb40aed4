package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Leaks: streams, events, allocations (device, host, managed), pools and
// contexts made by cuCtxCreate that were never destroyed: still alive when
// the trace ended, or reclaimed only by their context's destruction. Grouped
// by kind and creation site. Primary contexts are not reported (the runtime
// keeps them for the process's life). Cost: 0 (a leak costs memory, not time); the message gives bytes.
type leak struct{}

var _ Rule = leak{}

func (leak) ID() string { return "leak" }

func (leak) Doc() string {
	return "streams, events, allocations, pools and contexts still alive at exit, by creation site"
}

type leakKey struct {
	site
	kind trace.Object
}

func leaks(o *analysis.Object) bool {
	switch o.Kind {
	case trace.ObjectStream, trace.ObjectEvent, trace.ObjectAllocation, trace.ObjectHostAllocation,
		trace.ObjectManagedAllocation, trace.ObjectPool:
		return true
	case trace.ObjectContext:
		return !o.Primary
	}
	return false
}

type leakAcc struct {
	first call // the first create, by trace order
	count int
	bytes uint64
	ended int // reclaimed with their context
}

type leakCheck struct {
	f  *Facts
	by *groups[leakKey, leakAcc]
}

func (leak) Check(f *Facts) Check { return &leakCheck{f: f, by: newGroups[leakKey, leakAcc]()} }

func (c *leakCheck) ObjectEnd(o *analysis.Object, _ *Event) {
	if !leaks(o) || (o.Reason != analysis.EndAlive && o.Reason != analysis.EndContext) {
		return
	}
	create := c.f.createOf(o)
	a, fresh := c.by.get(leakKey{c.f.site(create), o.Kind})
	if fresh || create.index < a.first.index {
		a.first = create
	}
	a.count++
	a.bytes += o.Bytes
	if o.Reason == analysis.EndContext {
		a.ended++
	}
}

func (c *leakCheck) Findings() []Finding {
	var out []Finding
	for _, k := range c.by.sortedBy(func(a *leakAcc) int { return a.first.index }) {
		a := c.by.by[k]
		fd := c.f.finding(leak{}.ID(), Warning, a.first, a.first)
		fd.Count = a.count
		fd.Message = fmt.Sprintf("%s created here %s never destroyed", plural(a.count, k.kind.String()),
			map[bool]string{true: "was", false: "were"}[a.count == 1])
		if a.bytes > 0 {
			fd.Message += fmt.Sprintf(" (%s)", quantity.Bytes(a.bytes))
		}
		switch n := a.ended; {
		case n == 1 && a.count == 1:
			fd.Message += ": reclaimed only when its context was destroyed"
		case n == a.count:
			fd.Message += ": reclaimed only when their context was destroyed"
		case n > 0:
			fd.Message += fmt.Sprintf(": %d reclaimed when their context was destroyed, the rest alive at exit", n)
		default:
			fd.Message += ": alive when the trace ended"
		}
		fd.Fix = leakFix[k.kind]
		out = append(out, fd)
	}
	return out
}

var leakFix = map[trace.Object]string{
	trace.ObjectStream:            "destroy the stream with cuStreamDestroy when done (or reuse one long-lived stream)",
	trace.ObjectEvent:             "destroy the event with cuEventDestroy when done",
	trace.ObjectAllocation:        "free the allocation (cuMemFree / cuMemFreeAsync) when done",
	trace.ObjectHostAllocation:    "free the pinned buffer with cuMemFreeHost when done",
	trace.ObjectManagedAllocation: "free the managed allocation with cuMemFree when done",
	trace.ObjectPool:              "destroy the pool with cuMemPoolDestroy when done",
	trace.ObjectContext:           "destroy the context with cuCtxDestroy, or use the primary context (cuDevicePrimaryCtxRetain/Release)",
}
