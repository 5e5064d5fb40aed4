package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Redundant set-current: cuCtxSetCurrent of the context already current on
// the calling thread (what Device.set_current() or set_device() does on
// every call), and cuCtxPushCurrent/cuCtxPopCurrent pairs that either push
// the context already current or enclose no other driver call. The current
// context is the one package analysis replays on each thread's context
// stack, as for cuprof report's cuCtxSetCurrent table.
// redundantMin occurrences at one site make a finding. Cost: the redundant
// calls (for a pair, the push and the pop).
const redundantMin = 2

type redundantSetCurrent struct{}

var _ Rule = redundantSetCurrent{}

func (redundantSetCurrent) ID() string { return "redundant-set-current" }

func (redundantSetCurrent) Doc() string {
	return "setting the context already current on the thread, and push/pop pairs around nothing"
}

type redundantKey struct {
	Site
	pattern string
}

func (redundantSetCurrent) Check(f *Facts) []Finding {
	t := f.Trace
	type push struct {
		event     int
		used      bool // another call happened inside
		redundant bool // pushed the context already current
	}
	pushes := map[[2]uint32][]push{} // open cuCtxPushCurrent calls per thread
	g := newGroups[redundantKey]()
	cost := map[redundantKey]int64{}
	note := func(k redundantKey, i int, c int64) {
		g.add(k, i)
		cost[k] += c
	}
	// inside marks the innermost open push of the thread as enclosing a call
	inside := func(ps []push) {
		if n := len(ps); n > 0 {
			ps[n-1].used = true
		}
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall || !e.Result.OK() {
			continue
		}
		k := [2]uint32{e.PID, e.TID}
		ps := pushes[k]
		switch e.API {
		case trace.APICtxSetCurrent:
			if e.Handle != 0 && e.Handle == f.Context(i) {
				note(redundantKey{f.SiteOf(i), "set"}, i, f.CallNs(i))
			}
			inside(ps)
		case trace.APICtxPushCurrent:
			pushes[k] = append(ps, push{event: i, redundant: e.Handle != 0 && e.Handle == f.Context(i)})
		case trace.APICtxPopCurrent:
			n := len(ps)
			if n == 0 {
				continue
			}
			p := ps[n-1]
			pushes[k] = ps[:n-1]
			switch {
			case p.redundant:
				note(redundantKey{f.SiteOf(p.event), "push-current"}, p.event, f.CallNs(p.event)+f.CallNs(i))
			case !p.used:
				note(redundantKey{f.SiteOf(p.event), "push-empty"}, p.event, f.CallNs(p.event)+f.CallNs(i))
			}
			if p.used {
				inside(ps[:n-1])
			}
		case trace.APICtxGetCurrent:
			// a query does not make a push/pop pair useful
		default:
			inside(ps)
		}
	}
	var out []Finding
	for _, k := range g.order {
		evs := g.by[k]
		if len(evs) < redundantMin {
			continue
		}
		fd := f.finding(redundantSetCurrent{}.ID(), Info, evs[0], evs[0])
		fd.Count, fd.CostNs = len(evs), cost[k]
		each := quantity.Duration(float64(cost[k]) / float64(len(evs)))
		switch k.pattern {
		case "set":
			fd.Message = fmt.Sprintf("%s set the context that was already current on the thread (%s each)",
				plural(len(evs), "cuCtxSetCurrent call"), each)
			fd.Fix = "check the current context first (cuCtxGetCurrent is ~10 ns) or set it once per thread; " +
				"avoid calling Device.set_current()/set_device() on every operation"
		case "push-current":
			fd.Message = fmt.Sprintf("%s pushed the context that was already current (%s per pair)",
				plural(len(evs), "cuCtxPushCurrent/cuCtxPopCurrent pair"), each)
			fd.Fix = "skip the push and pop when cuCtxGetCurrent already returns the context"
		default:
			fd.Message = fmt.Sprintf("%s enclosed no other driver call (%s per pair)",
				plural(len(evs), "cuCtxPushCurrent/cuCtxPopCurrent pair"), each)
			fd.Fix = "remove the push/pop pair, or hoist it around the code that needs the context"
		}
		out = append(out, fd)
	}
	return out
}
