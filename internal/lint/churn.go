package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
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

func (c churn) Check(f *Facts) []Finding {
	g := newGroups[Site]()
	objs := map[int]*analysis.Object{}
	for i := range f.Analysis.Objects {
		o := &f.Analysis.Objects[i]
		if o.Kind != c.kind || !o.Churn(analysis.ChurnWindow) {
			continue
		}
		g.add(f.SiteOf(o.Create), o.Create)
		objs[o.Create] = o
	}
	var out []Finding
	for _, site := range g.order {
		creates := g.by[site]
		if len(creates) < churnMin {
			continue
		}
		var cost int64
		lifetimes := make([]int64, 0, len(creates))
		for _, ci := range creates {
			o := objs[ci]
			cost += f.OwnNs(o.Create) + f.OwnNs(o.Destroy)
			lifetimes = append(lifetimes, o.Lifetime())
		}
		sortInt64(lifetimes)
		fd := f.finding(c.id, Warning, creates[0], creates[0])
		fd.Count, fd.CostNs = len(creates), cost
		fd.Message = fmt.Sprintf("%s created and destroyed again within 1 ms (median lifetime %s) at one site; "+
			"create+destroy cost %s each",
			plural(len(creates), c.noun), quantity.Duration(float64(analysis.Percentile(lifetimes, 50))),
			quantity.Duration(float64(cost)/float64(len(creates))))
		fd.Fix = c.fix
		out = append(out, fd)
	}
	return out
}
