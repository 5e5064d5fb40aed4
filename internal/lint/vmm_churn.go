package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Virtual-memory churn: memory unmapped (cuMemUnmap) at an address and
// mapped there again later (cuMemMap), as an allocator that grows and
// shrinks a segment step after step does (PyTorch's expandable segments
// return memory when a step frees it and map it again in the next). At
// least vmmChurnMin re-maps at one site (the cuMemMap's) make a finding.
// Cost: for each re-map, the unmap before it, the map, and the
// cuMemSetAccess calls on the new mapping, plus the cuMemCreate and
// cuMemRelease of physical memory made and released within
// analysis.ChurnWindow around a re-made mapping (made for it). Up to
// vmmChurnAddrs unmapped addresses are remembered per process.
const (
	vmmChurnMin   = 3
	vmmChurnAddrs = 1 << 16
)

type vmmChurn struct{}

var _ Rule = vmmChurn{}

func (vmmChurn) ID() string { return "vmm-churn" }

func (vmmChurn) Doc() string {
	return "virtual memory unmapped and mapped again at the same address, many times, at one site"
}

type vmmAcc struct {
	first, example call // the first re-map, the costliest
	count          int
	cost           int64
	bytes          uint64
}

type mapKey struct {
	pid  uint32
	addr uint64
}

type vmmCheck struct {
	f  *Facts
	by *groups[site, vmmAcc]
	// unmapped: the duration of the unmap at each address unmapped and not
	// mapped again since
	unmapped map[mapKey]int64
	perPID   map[uint32]int
	// remade: the re-made mappings alive, by address, with their site;
	// churned: the physical handles mapped by one, by handle
	remade  map[mapKey]site
	churned map[mapKey]site
}

func (vmmChurn) Check(f *Facts) Check {
	return &vmmCheck{f: f, by: newGroups[site, vmmAcc](), unmapped: map[mapKey]int64{}, perPID: map[uint32]int{},
		remade: map[mapKey]site{}, churned: map[mapKey]site{}}
}

func (c *vmmCheck) Event(e *Event) {
	if e.Kind != trace.KindCall || !e.Result.OK() {
		return
	}
	k := mapKey{e.PID, e.Handle}
	switch e.API {
	case trace.APIMemUnmap:
		if len(c.unmapped) < vmmChurnAddrs*max(len(c.perPID), 1) && c.perPID[e.PID] < vmmChurnAddrs {
			if _, ok := c.unmapped[k]; !ok {
				c.perPID[e.PID]++
			}
			c.unmapped[k] = e.OwnNs()
		}
	case trace.APIMemMap:
		unmapNs, ok := c.unmapped[k]
		if !ok {
			return
		}
		delete(c.unmapped, k)
		c.perPID[e.PID]--
		cl := callOf(e)
		site := c.f.site(cl)
		a, fresh := c.by.get(site)
		ns := unmapNs + cl.ns
		if fresh {
			a.first, a.example = cl, cl
		}
		if ns > a.example.ns {
			a.example = cl
		}
		a.count++
		a.cost += ns
		a.bytes += e.Size
		c.remade[k] = site
		if e.Aux != 0 {
			c.churned[mapKey{e.PID, e.Aux}] = site
		}
	case trace.APIMemSetAccess:
		if site, ok := c.remade[k]; ok {
			c.by.by[site].cost += e.OwnNs()
		}
	}
}

func (c *vmmCheck) ObjectEnd(o *analysis.Object, ender *Event) {
	switch o.Kind {
	case trace.ObjectMapping:
		delete(c.remade, mapKey{o.PID, o.Handle})
	case trace.ObjectPhysicalMemory:
		k := mapKey{o.PID, o.Handle}
		site, ok := c.churned[k]
		delete(c.churned, k)
		if !ok || ender == nil || !o.Churn(analysis.ChurnWindow) {
			return
		}
		// physical memory made for a re-made mapping and released with it
		c.by.by[site].cost += c.f.createOf(o).ns + ender.OwnNs()
	}
}

func (c *vmmCheck) Findings() []Finding {
	var out []Finding
	for _, site := range c.by.order {
		a := c.by.by[site]
		if a.count < vmmChurnMin {
			continue
		}
		fd := c.f.finding(vmmChurn{}.ID(), Warning, a.first, a.example)
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%s (%s in all) unmapped and mapped again at the same address at one site; "+
			"unmapping, mapping and setting access again cost %s each",
			plural(a.count, "mapping"), quantity.Bytes(a.bytes), quantity.Duration(float64(a.cost)/float64(a.count)))
		fd.Fix = "keep memory mapped between steps instead of returning it: in PyTorch leave expandable segments " +
			"their memory (do not call torch.cuda.empty_cache() per step; raise garbage_collection_threshold in " +
			"PYTORCH_CUDA_ALLOC_CONF); in your own allocator unmap only above a high-water mark"
		out = append(out, fd)
	}
	return out
}
