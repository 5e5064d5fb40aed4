package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Idle synchronizes: synchronizes that wait on nothing, because no
// asynchronous work was issued since the last synchronize that covered it
// (see Sync for the exact definition), leaving out those that trimmed a pool
// (pool-trim). syncIdleMin of them at one site (one API, caller, range) make
// a finding. Cost: all of their time.
const syncIdleMin = 3

type syncIdle struct{}

var _ Rule = syncIdle{}

func (syncIdle) ID() string { return "sync-idle" }

func (syncIdle) Doc() string {
	return "synchronizes that wait on nothing: no asynchronous work since the last synchronize"
}

type idleKey struct {
	Site
	api trace.API
}

func (syncIdle) Check(f *Facts) []Finding {
	t := f.Trace
	g := newGroups[idleKey]()
	for _, s := range f.Syncs {
		if s.Idle && !s.Trimmed {
			g.add(idleKey{f.SiteOf(s.Event), t.Events[s.Event].API}, s.Event)
		}
	}
	var out []Finding
	for _, k := range g.order {
		evs := g.by[k]
		if len(evs) < syncIdleMin {
			continue
		}
		var total int64
		for _, i := range evs {
			total += f.CallNs(i)
		}
		fd := f.finding(syncIdle{}.ID(), Warning, evs[0], evs[0])
		fd.Count, fd.CostNs = len(evs), total
		fd.Message = fmt.Sprintf("%d %s calls waited on nothing (no asynchronous work since the previous synchronize), %s each",
			len(evs), k.api, quantity.Duration(float64(total)/float64(len(evs))))
		fd.Fix = "drop the synchronize, or synchronize only after queuing work; track whether work is " +
			"pending (or query with cuStreamQuery) before synchronizing"
		out = append(out, fd)
	}
	return out
}
