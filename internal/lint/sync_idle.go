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
	site
	api trace.API
}

type syncIdleCheck struct {
	f  *Facts
	by *groups[idleKey, callsAcc]
}

func (syncIdle) Check(f *Facts) Check {
	return &syncIdleCheck{f: f, by: newGroups[idleKey, callsAcc]()}
}

func (c *syncIdleCheck) Event(e *Event) {
	if e.Sync == nil || !e.Sync.Idle || e.Sync.Trimmed {
		return
	}
	cl := callOf(e)
	a, fresh := c.by.get(idleKey{c.f.site(cl), e.API})
	a.add(cl, cl.ns, fresh)
}

func (c *syncIdleCheck) Findings() []Finding {
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		if a.count < syncIdleMin {
			continue
		}
		fd := c.f.finding(syncIdle{}.ID(), Warning, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%d %s calls waited on nothing (no asynchronous work since the previous synchronize), %s each",
			a.count, k.api, quantity.Duration(float64(a.cost)/float64(a.count)))
		fd.Fix = "drop the synchronize, or synchronize only after queuing work; track whether work is " +
			"pending (or query with cuStreamQuery) before synchronizing"
		out = append(out, fd)
	}
	return out
}
