package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// A query asked again with an answer that cannot have changed: a capture
// check (cuStreamIsCapturing, cuStreamGetCaptureInfo) of a stream whose
// capture state no call changed since the same check gave the same
// answer; an occupancy query (the cuOccupancy* family), a function or
// kernel attribute read (cuFuncGetAttribute, cuKernelGetAttribute) or
// cuCtxGetStreamPriorityRange with the same arguments as an earlier one
// (their answers depend only on the arguments and the context). A call is
// a repeat when the process made the same call (API, context, object,
// flags and size arguments, capture state) before; at least cachedMin
// repeats of one API at one site, and at least half its calls there, make
// a finding. Cost: the repeats. Up to cachedKeys distinct calls are
// remembered per site; past that a new call is not a repeat (the count is
// then low, never high).
const (
	cachedMin  = 10
	cachedKeys = 4096
)

type cachedQuery struct{}

var _ Rule = cachedQuery{}

func (cachedQuery) ID() string { return "cached-query" }

func (cachedQuery) Doc() string {
	return "capture checks and occupancy or attribute queries asked again with the same arguments and answer"
}

// cacheable reports whether a's answer can be cached by its caller.
func cacheable(a trace.API) bool {
	switch a {
	case trace.APIStreamIsCapturing, trace.APIStreamGetCaptureInfo, trace.APIFuncGetAttribute,
		trace.APIKernelGetAttribute, trace.APICtxGetStreamPriorityRange:
		return true
	}
	return a.Info().Category == trace.CategoryOccupancy
}

type queryKey struct {
	site
	api trace.API
}

// queryArgs is what a query's answer depends on.
type queryArgs struct {
	ctx, handle, stream, size, flags uint64
	epoch                            int // capture checks: the stream's capture epoch
}

type queryAcc struct {
	first, example call
	calls, repeats int
	cost           int64
	seen           map[queryArgs]bool
}

type queryCheck struct {
	f  *Facts
	by *groups[queryKey, queryAcc]
	// epochs counts the capture begins and ends per (process, stream): a
	// capture check's answer changes only with them
	epochs map[[2]uint64]int
}

func (cachedQuery) Check(f *Facts) Check {
	return &queryCheck{f: f, by: newGroups[queryKey, queryAcc](), epochs: map[[2]uint64]int{}}
}

func (c *queryCheck) Event(e *Event) {
	if e.Kind != trace.KindCall {
		return
	}
	if info := e.API.Info(); info.Category == trace.CategoryCapture && e.API != trace.APIStreamIsCapturing &&
		e.API != trace.APIStreamGetCaptureInfo {
		// begin, end or a mode change: what the checks answer may change
		c.epochs[[2]uint64{uint64(e.PID), e.Stream}]++
		return
	}
	if !e.Result.OK() || !cacheable(e.API) {
		return
	}
	args := queryArgs{ctx: e.Context, handle: e.Handle, size: e.Size, flags: e.Flags}
	if e.API == trace.APIStreamIsCapturing || e.API == trace.APIStreamGetCaptureInfo {
		args.stream = e.Stream
		args.epoch = c.epochs[[2]uint64{uint64(e.PID), e.Stream}]
	}
	cl := callOf(e)
	a, fresh := c.by.get(queryKey{c.f.site(cl), e.API})
	if fresh {
		a.first, a.example, a.seen = cl, cl, map[queryArgs]bool{}
	}
	a.calls++
	if a.seen[args] {
		a.repeats++
		a.cost += cl.ns
		if a.repeats == 1 {
			a.example = cl
		}
	} else if len(a.seen) < cachedKeys {
		a.seen[args] = true
	}
}

func (c *queryCheck) Findings() []Finding {
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		if a.repeats < cachedMin || 2*a.repeats < a.calls {
			continue
		}
		fd := c.f.finding(cachedQuery{}.ID(), Info, a.first, a.example)
		fd.Count, fd.CostNs = a.repeats, a.cost
		each := quantity.Duration(float64(a.cost) / float64(a.repeats))
		switch k.api {
		case trace.APIStreamIsCapturing, trace.APIStreamGetCaptureInfo:
			fd.Message = fmt.Sprintf("%d of %d %s calls at one site asked about a stream whose capture state "+
				"had not changed since the same call (%s each)", a.repeats, a.calls, k.api, each)
			fd.Fix = "check the capture state once per operation, not per allocation or launch: keep it with the " +
				"stream and refresh it where the program begins or ends a capture (cuStreamBeginCapture/" +
				"cuStreamEndCapture) or hands the stream to code that may"
		default:
			fd.Message = fmt.Sprintf("%d of %d %s calls at one site repeated an earlier call's arguments, "+
				"whose answer cannot have changed (%s each)", a.repeats, a.calls, k.api, each)
			fd.Fix = "compute the answer once per function and configuration (block size, shared memory, flags) " +
				"and keep it beside the function handle, e.g. in the launcher's kernel cache"
		}
		out = append(out, fd)
	}
	return out
}
