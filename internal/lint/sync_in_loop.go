package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Synchronize in a hot loop: one thread calling the same synchronize from
// one site (caller and range) at least hotLoopMin times, with a median gap
// between consecutive calls of at most hotLoopGapNs, and a median duration
// of at least hotLoopWaitFactor idle synchronizes (they wait for GPU work:
// each stalls the host until the GPU drains, so the loop cannot queue ahead;
// a synchronize that returns at once costs little and is left to
// sync-idle). Synchronizes that pool-trim explains are left out. Cost: the
// time blocked in those synchronizes less the longest one (the one
// synchronize after the loop that would remain).
const (
	hotLoopMin        = 10
	hotLoopGapNs      = 1_000_000
	hotLoopWaitFactor = 5
)

type syncInLoop struct{}

var _ Rule = syncInLoop{}

func (syncInLoop) ID() string { return "sync-in-loop" }

func (syncInLoop) Doc() string {
	return "the same synchronize called from one site many times at short intervals"
}

type loopKey struct {
	site
	tid uint32
	api trace.API
}

type loopAcc struct {
	first, example call // the first and the longest
	count          int
	prevStart      int64
	gaps, durs     *quantile.Sketch
	total          int64
}

type syncInLoopCheck struct {
	f  *Facts
	by *groups[loopKey, loopAcc]
}

func (syncInLoop) Check(f *Facts) Check {
	return &syncInLoopCheck{f: f, by: newGroups[loopKey, loopAcc]()}
}

func (c *syncInLoopCheck) Event(e *Event) {
	if e.Sync == nil || e.Sync.Trimmed {
		return
	}
	cl := callOf(e)
	a, fresh := c.by.get(loopKey{c.f.site(cl), e.TID, e.API})
	if fresh {
		a.first, a.example, a.gaps, a.durs = cl, cl, newSketch(), newSketch()
	} else {
		a.gaps.Add(e.Start - a.prevStart)
	}
	a.prevStart = e.Start
	a.count++
	a.durs.Add(cl.ns)
	a.total += cl.ns
	if cl.ns > a.example.ns {
		a.example = cl
	}
}

func (c *syncInLoopCheck) Findings() []Finding {
	f := c.f
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		if a.count < hotLoopMin {
			continue
		}
		gap := median(a.gaps)
		if gap > hotLoopGapNs || median(a.durs) < hotLoopWaitFactor*f.IdleSyncNs {
			continue
		}
		fd := f.finding(syncInLoop{}.ID(), Warning, a.first, a.example)
		fd.Count, fd.CostNs = a.count, a.total-a.example.ns
		fd.Message = fmt.Sprintf("%s called %d times from one site, every %s (median), blocking %s in all",
			k.api, a.count, quantity.Duration(float64(gap)), quantity.Duration(float64(a.total)))
		fd.Fix = "synchronize once after the loop; order work between streams with events " +
			"(cuEventRecord + cuStreamWaitEvent) instead of a host synchronize per iteration"
		out = append(out, fd)
	}
	return out
}
