package lint

import (
	"fmt"

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
	Site
	dev  int32
	size uint64
}

func (allocChurn) Check(f *Facts) []Finding {
	t := f.Trace
	g := newGroups[allocSite]()
	obj := map[int]int{} // create event -> object index
	for i := range f.Analysis.Objects {
		o := &f.Analysis.Objects[i]
		if o.Kind != trace.ObjectAllocation || t.Events[o.Create].API != trace.APIMemAlloc {
			continue
		}
		g.add(allocSite{f.SiteOf(o.Create), o.Device, o.Bytes}, o.Create)
		obj[o.Create] = i
	}
	var out []Finding
	for _, k := range g.order {
		creates := g.by[k]
		remakes, first := 0, -1
		var cost int64
		for j := 1; j < len(creates); j++ {
			prev := &f.Analysis.Objects[obj[creates[j-1]]]
			if prev.Destroy < 0 || t.Events[prev.Destroy].API != trace.APIMemFree ||
				t.Events[prev.Destroy].Start > t.Events[creates[j]].Start {
				continue
			}
			remakes++
			if first < 0 {
				first = creates[j]
			}
			cost += f.CallNs(prev.Destroy) + f.CallNs(creates[j])
		}
		if remakes < allocChurnMin {
			continue
		}
		fd := f.finding(allocChurn{}.ID(), Warning, creates[0], first)
		fd.Count, fd.CostNs = remakes, cost
		fd.Message = fmt.Sprintf("%s of %s freed with cuMemFree and allocated again with cuMemAlloc at one site; "+
			"free+alloc cost %s each", plural(remakes, "buffer"), quantity.Bytes(k.size),
			quantity.Duration(float64(cost)/float64(remakes)))
		fd.Fix = "keep the buffer and reuse it across iterations, or allocate stream-ordered from a pool " +
			"(cuMemAllocAsync / cuMemAllocFromPoolAsync with a non-zero release threshold) which caches freed memory"
		out = append(out, fd)
	}
	return out
}
