package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// churnMin is how many objects of one kind, created and destroyed again
// within analysis.ChurnWindow (1 ms) at one site, make a finding.
const churnMin = 3

// churn finds objects of one kind created and destroyed within 1 ms, many
// times, at one site (process, caller of the create, enclosing range).
// Cost: the create and destroy calls of those objects (less what pool-trim
// attributes to trimming in a destroy).
type churn struct {
	id, doc, noun string
	kind          trace.Object
	fix           string
}

var _ Rule = churn{}

func (c churn) ID() string  { return c.id }
func (c churn) Doc() string { return c.doc }

type churnAcc struct {
	first     call // the first create, by trace order
	count     int
	cost      int64
	lifetimes *quantile.Sketch
}

type churnCheck struct {
	churn
	f  *Facts
	by *groups[site, churnAcc]
}

func (c churn) Check(f *Facts) Check {
	return &churnCheck{churn: c, f: f, by: newGroups[site, churnAcc]()}
}

func (c *churnCheck) ObjectEnd(o *analysis.Object, ender *Event) {
	if o.Kind != c.kind || !o.Churn(analysis.ChurnWindow) || ender == nil {
		return
	}
	create := c.f.createOf(o)
	a, fresh := c.by.get(c.f.site(create))
	if fresh {
		a.first, a.lifetimes = create, newSketch()
	}
	if create.index < a.first.index {
		a.first = create
	}
	a.count++
	a.cost += create.ns + ender.OwnNs()
	a.lifetimes.Add(o.Lifetime())
}

func (c *churnCheck) Findings() []Finding {
	var out []Finding
	for _, site := range c.by.sortedBy(func(a *churnAcc) int { return a.first.index }) {
		a := c.by.by[site]
		if a.count < churnMin {
			continue
		}
		fd := c.f.finding(c.id, Warning, a.first, a.first)
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%s created and destroyed again within 1 ms (median lifetime %s) at one site; "+
			"create+destroy cost %s each",
			plural(a.count, c.noun), quantity.Duration(float64(median(a.lifetimes))),
			quantity.Duration(float64(a.cost)/float64(a.count)))
		fd.Fix = c.fix
		out = append(out, fd)
	}
	return out
}
