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
	site
	pattern string
}

// push is an open cuCtxPushCurrent.
type push struct {
	at        call
	used      bool // another call happened inside
	redundant bool // pushed the context already current
}

type redundantCheck struct {
	f      *Facts
	by     *groups[redundantKey, callsAcc]
	pushes map[[2]uint32][]push // open cuCtxPushCurrent calls per thread
}

func (redundantSetCurrent) Check(f *Facts) Check {
	return &redundantCheck{f: f, by: newGroups[redundantKey, callsAcc](), pushes: map[[2]uint32][]push{}}
}

func (c *redundantCheck) note(pattern string, at call, cost int64) {
	a, fresh := c.by.get(redundantKey{c.f.site(at), pattern})
	a.add(at, cost, fresh)
}

// inside marks the innermost open push of the thread as enclosing a call
func inside(ps []push) {
	if n := len(ps); n > 0 {
		ps[n-1].used = true
	}
}

func (c *redundantCheck) Event(e *Event) {
	if e.Kind != trace.KindCall || !e.Result.OK() {
		return
	}
	k := [2]uint32{e.PID, e.TID}
	ps := c.pushes[k]
	switch e.API {
	case trace.APICtxSetCurrent:
		if e.Handle != 0 && e.Handle == e.Context {
			c.note("set", callOf(e), e.Duration)
		}
		inside(ps)
	case trace.APICtxPushCurrent:
		c.pushes[k] = append(ps, push{at: callOf(e), redundant: e.Handle != 0 && e.Handle == e.Context})
	case trace.APICtxPopCurrent:
		n := len(ps)
		if n == 0 {
			return
		}
		p := ps[n-1]
		c.pushes[k] = ps[:n-1]
		switch {
		case p.redundant:
			c.note("push-current", p.at, p.at.ns+e.Duration)
		case !p.used:
			c.note("push-empty", p.at, p.at.ns+e.Duration)
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

func (c *redundantCheck) Findings() []Finding {
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		if a.count < redundantMin {
			continue
		}
		fd := c.f.finding(redundantSetCurrent{}.ID(), Info, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		each := quantity.Duration(float64(a.cost) / float64(a.count))
		switch k.pattern {
		case "set":
			fd.Message = fmt.Sprintf("%s set the context that was already current on the thread (%s each)",
				plural(a.count, "cuCtxSetCurrent call"), each)
			fd.Fix = "check the current context first (cuCtxGetCurrent is ~10 ns) or set it once per thread; " +
				"avoid calling Device.set_current()/set_device() on every operation"
		case "push-current":
			fd.Message = fmt.Sprintf("%s pushed the context that was already current (%s per pair)",
				plural(a.count, "cuCtxPushCurrent/cuCtxPopCurrent pair"), each)
			fd.Fix = "skip the push and pop when cuCtxGetCurrent already returns the context"
		default:
			fd.Message = fmt.Sprintf("%s enclosed no other driver call (%s per pair)",
				plural(a.count, "cuCtxPushCurrent/cuCtxPopCurrent pair"), each)
			fd.Fix = "remove the push/pop pair, or hoist it around the code that needs the context"
		}
		out = append(out, fd)
	}
	return out
}
