package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
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
	Site
	tid uint32
	api trace.API
}

func (syncInLoop) Check(f *Facts) []Finding {
	t := f.Trace
	g := newGroups[loopKey]()
	for _, s := range f.Syncs {
		if s.Trimmed {
			continue
		}
		e := &t.Events[s.Event]
		g.add(loopKey{f.SiteOf(s.Event), e.TID, e.API}, s.Event)
	}
	var out []Finding
	for _, k := range g.order {
		evs := g.by[k]
		if len(evs) < hotLoopMin {
			continue
		}
		gaps := make([]int64, 0, len(evs)-1)
		for j := 1; j < len(evs); j++ {
			gaps = append(gaps, t.Events[evs[j]].Start-t.Events[evs[j-1]].Start)
		}
		sortInt64(gaps)
		gap := analysis.Percentile(gaps, 50)
		if gap > hotLoopGapNs {
			continue
		}
		var total, longest int64
		example := evs[0]
		durs := make([]int64, 0, len(evs))
		for _, i := range evs {
			d := f.CallNs(i)
			durs = append(durs, d)
			total += d
			if d > longest {
				longest, example = d, i
			}
		}
		sortInt64(durs)
		if analysis.Percentile(durs, 50) < hotLoopWaitFactor*f.IdleSyncNs {
			continue
		}
		fd := f.finding(syncInLoop{}.ID(), Warning, evs[0], example)
		fd.Count, fd.CostNs = len(evs), total-longest
		fd.Message = fmt.Sprintf("%s called %d times from one site, every %s (median), blocking %s in all",
			k.api, len(evs), quantity.Duration(float64(gap)), quantity.Duration(float64(total)))
		fd.Fix = "synchronize once after the loop; order work between streams with events " +
			"(cuEventRecord + cuStreamWaitEvent) instead of a host synchronize per iteration"
		out = append(out, fd)
	}
	return out
}
