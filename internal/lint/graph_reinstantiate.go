package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Graph instantiated per step: at one site, at least reinstantiateMin graph
// execs instantiated whose median number of uses (launches and updates) is
// at most reinstantiateUses. A graph is instantiated to be replayed many
// times; one instantiated, launched once or twice and dropped again and
// again pays instantiation (tens of microseconds, more with more nodes)
// where a launch of the exec it had would do, or a cuGraphExecUpdate when
// the parameters changed. Cost: the instantiations and exec destroys of
// those execs, less one instantiation (the one a reused exec still needs).
const (
	reinstantiateMin  = 3
	reinstantiateUses = 2
)

type graphReinstantiate struct{}

var _ Rule = graphReinstantiate{}

func (graphReinstantiate) ID() string { return "graph-reinstantiate" }

func (graphReinstantiate) Doc() string {
	return "graphs instantiated again and again at one site, each exec launched only once or twice"
}

type reinstAcc struct {
	first, example call // the first instantiation, the slowest
	count          int
	cost           int64
	uses           *quantile.Sketch
}

type reinstCheck struct {
	f  *Facts
	by *groups[site, reinstAcc]
}

func (graphReinstantiate) Check(f *Facts) Check {
	return &reinstCheck{f: f, by: newGroups[site, reinstAcc]()}
}

func (c *reinstCheck) ObjectEnd(o *analysis.Object, ender *Event) {
	if o.Kind != trace.ObjectGraphExec {
		return
	}
	create := c.f.createOf(o)
	a, fresh := c.by.get(c.f.site(create))
	if fresh {
		a.first, a.example, a.uses = create, create, newSketch()
	}
	if create.index < a.first.index {
		a.first = create
	}
	if create.ns > a.example.ns {
		a.example = create
	}
	a.count++
	a.cost += create.ns
	if ender != nil && ender.Object != analysis.NoObject && ender.Result.OK() {
		a.cost += ender.OwnNs() // the exec's destroy
	}
	a.uses.Add(int64(o.Uses))
}

func (c *reinstCheck) Findings() []Finding {
	var out []Finding
	for _, site := range c.by.sortedBy(func(a *reinstAcc) int { return a.first.index }) {
		a := c.by.by[site]
		uses := median(a.uses)
		if a.count < reinstantiateMin || uses > reinstantiateUses {
			continue
		}
		fd := c.f.finding(graphReinstantiate{}.ID(), Warning, a.first, a.example)
		fd.Count = a.count
		fd.CostNs = max(a.cost-a.first.ns, 0)
		fd.Message = fmt.Sprintf("%s made at one site were launched %s each (median): "+
			"instantiating and destroying them took %s, %s per exec",
			plural(a.count, "graph exec"), plural(int(uses), "time"), quantity.Duration(float64(a.cost)),
			quantity.Duration(float64(a.cost)/float64(a.count)))
		fd.Fix = "instantiate the graph once and replay the exec with cuGraphLaunch; when only parameters change, " +
			"update the exec in place (cuGraphExecUpdate from the new graph, or cuGraphExecKernelNodeSetParams) " +
			"and instantiate again only when the update reports a topology change; in PyTorch capture once " +
			"(torch.cuda.CUDAGraph / torch.cuda.graph) and call replay() every step"
		out = append(out, fd)
	}
	return out
}
