package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Allocation churn: cuMemAlloc/cuMemFree (not stream-ordered, not pooled)
// of the same size at one site, where each buffer is freed and the next one
// allocated again. The rule orders the cuMemAlloc allocations of one site
// (process, device, size, caller, range) by creation and counts a re-make
// each time an allocation is created after the previous one was freed by
// cuMemFree. allocChurnMin re-makes make a finding. Cost: the free and the
// re-allocation of each re-make (keeping the buffer would save both).
const allocChurnMin = 3

type allocChurn struct{}

var _ Rule = allocChurn{}

func (allocChurn) ID() string { return "alloc-churn" }

func (allocChurn) Doc() string {
	return "same-size cuMemAlloc/cuMemFree repeated at one site instead of reusing the buffer or a pool"
}

type allocSite struct {
	site
	dev  int32
	size uint64
}

// allocRec is one cuMemAlloc allocation of a site: whether it was freed
// by cuMemFree and when, and the next allocation of its site while it was
// alive (their pair is judged when it ends).
type allocRec struct {
	site    *allocAcc
	ended   bool
	freed   bool // ended by cuMemFree
	freedAt int64
	freeNs  int64
	next    *call
}

type allocAcc struct {
	first, firstRemake call
	remakes            int
	cost               int64
	last               *allocRec // the site's latest allocation
}

type allocChurnCheck struct {
	f    *Facts
	by   *groups[allocSite, allocAcc]
	live map[int]*allocRec // by create index
}

func (allocChurn) Check(f *Facts) Check {
	return &allocChurnCheck{f: f, by: newGroups[allocSite, allocAcc](), live: map[int]*allocRec{}}
}

func (c *allocChurnCheck) Event(e *Event) {
	if e.Kind != trace.KindCall || e.API != trace.APIMemAlloc || !e.Created() {
		return
	}
	o := &e.Analysis().Objects[e.Object]
	if o.Kind != trace.ObjectAllocation {
		return
	}
	cl := callOf(e)
	a, fresh := c.by.get(allocSite{c.f.site(cl), o.Device, o.Bytes})
	if fresh {
		a.first = cl
	}
	if p := a.last; p != nil {
		if p.ended {
			c.judge(p, cl)
		} else {
			p.next = &cl
		}
	}
	a.last = &allocRec{site: a}
	c.live[e.Index] = a.last
}

// judge counts a re-make when next was allocated after prev was freed by
// cuMemFree.
func (c *allocChurnCheck) judge(prev *allocRec, next call) {
	if !prev.freed || prev.freedAt > next.start {
		return
	}
	a := prev.site
	if a.remakes == 0 || next.index < a.firstRemake.index {
		a.firstRemake = next
	}
	a.remakes++
	a.cost += prev.freeNs + next.ns
}

func (c *allocChurnCheck) ObjectEnd(o *analysis.Object, ender *Event) {
	r := c.live[o.Create]
	if r == nil {
		return
	}
	delete(c.live, o.Create)
	r.ended = true
	if ender != nil && o.Destroy == ender.Index && ender.API == trace.APIMemFree {
		r.freed, r.freedAt, r.freeNs = true, ender.Start, ender.Duration
	}
	if r.next != nil {
		c.judge(r, *r.next)
		r.next = nil
	}
}

func (c *allocChurnCheck) Findings() []Finding {
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		if a.remakes < allocChurnMin {
			continue
		}
		fd := c.f.finding(allocChurn{}.ID(), Warning, a.first, a.firstRemake)
		fd.Count, fd.CostNs = a.remakes, a.cost
		fd.Message = fmt.Sprintf("%s of %s freed with cuMemFree and allocated again with cuMemAlloc at one site; "+
			"free+alloc cost %s each", plural(a.remakes, "buffer"), quantity.Bytes(k.size),
			quantity.Duration(float64(a.cost)/float64(a.remakes)))
		fd.Fix = "keep the buffer and reuse it across iterations, or allocate stream-ordered from a pool " +
			"(cuMemAllocAsync / cuMemAllocFromPoolAsync with a non-zero release threshold) which caches freed memory"
		out = append(out, fd)
	}
	return out
}
