package lint

import (
	"fmt"
	"strings"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Pool trimming: with CU_MEMPOOL_ATTR_RELEASE_THRESHOLD at 0 (the default of
// every pool), each synchronize after a cuMemFreeAsync (or the destroy of the
// stream the memory was freed on) returns the pool's free memory to the OS,
// and the next allocation maps it again. On an H200 an alloc+free+synchronize
// loop costs ~100-137 us instead of ~2-3.5 us. Facts finds the TrimPoints
// (trims.go); the rule groups them by pool and by the site of the trimming
// call (where the time is lost). Cost: each trimming call's excess over its
// baseline plus the excess of the allocation that re-grew the pool.
type poolTrim struct{}

var _ Rule = poolTrim{}

func (poolTrim) ID() string { return "pool-trim" }

func (poolTrim) Doc() string {
	return "frees into a pool with release threshold 0 followed by synchronizes (or stream destroys) far slower than usual"
}

type poolTrimKey struct {
	poolKey
	site
	api trace.API
}

type poolTrimAcc struct {
	first, example call
	count          int
	cost, total    int64
	frees, lowered int
	regrows        int
	regrowNs       int64
	baseline       int64
	measured       bool
}

type poolTrimCheck struct {
	f  *Facts
	by *groups[poolTrimKey, poolTrimAcc]
}

func (poolTrim) Check(f *Facts) Check {
	return &poolTrimCheck{f: f, by: newGroups[poolTrimKey, poolTrimAcc]()}
}

func (c *poolTrimCheck) key(tp *trimPoint) poolTrimKey {
	return poolTrimKey{tp.Trim.Pool, c.f.site(tp.at), tp.at.api}
}

func (c *poolTrimCheck) Event(e *Event) {
	if tp := e.Trim; tp != nil {
		a, fresh := c.by.get(c.key(tp))
		if fresh {
			a.first, a.example, a.baseline, a.measured = tp.at, tp.at, tp.BaselineNs, tp.Measured
		}
		a.count++
		a.frees += tp.Trim.Frees
		a.lowered += tp.Trim.Lowered
		a.cost += tp.ExcessNs
		a.total += tp.at.ns
		if tp.at.ns > a.example.ns {
			a.example = tp.at
		}
	}
	if tp := e.Regrow; tp != nil {
		a, _ := c.by.get(c.key(tp))
		a.cost += tp.RegrowExcessNs
		a.regrows++
		a.regrowNs += tp.RegrowExcessNs
	}
}

func (c *poolTrimCheck) Findings() []Finding {
	f := c.f
	var out []Finding
	for _, k := range c.by.order {
		a := c.by.by[k]
		fd := f.finding(poolTrim{}.ID(), Error, a.first, a.example)
		pool := fmt.Sprintf("pool %#x", k.Handle)
		if k.DefaultPool {
			pool = "the default pool"
			if k.Device != trace.NoDevice {
				pool += fmt.Sprintf(" of device %d", k.Device)
			}
		}
		var causes []string
		if a.frees > 0 {
			causes = append(causes, plural(a.frees, "free")+" into "+pool+" (release threshold 0)")
		}
		if a.lowered > 0 {
			what := "the release threshold of " + pool
			if a.frees > 0 {
				what = "its release threshold"
			}
			causes = append(causes, fmt.Sprintf("%s of %s to 0", plural(a.lowered, "lowering"), what))
		}
		calls, base := plural(a.count, "synchronize"), "an idle synchronize"
		if k.api == trace.APIStreamDestroy {
			calls, base = fmt.Sprintf("%d cuStreamDestroy calls", a.count), "a cuStreamDestroy that releases nothing"
		}
		if a.measured {
			base += " of this trace"
		} else {
			base += ", assumed: none in this trace to measure"
		}
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%s after %s took %s on average instead of %s (%s); each returned the pool's free memory to the OS",
			calls, strings.Join(causes, " and "), quantity.Duration(float64(a.total)/float64(a.count)),
			quantity.Duration(float64(a.baseline)), base)
		if a.regrows > 0 {
			fd.Message += fmt.Sprintf(", and %s after %s took %s more on average to map it again",
				plural(a.regrows, "allocation"), map[bool]string{true: "it", false: "them"}[a.count == 1],
				quantity.Duration(float64(a.regrowNs)/float64(a.regrows)))
		}
		fd.Fix = "keep freed memory in the pool: raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, e.g. " +
			"cuuint64_t max = UINT64_MAX; cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max) " +
			"(runtime: cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &max)) on the pool " +
			"from cuDeviceGetDefaultMemPool, once at start-up"
		out = append(out, fd)
	}
	return out
}
