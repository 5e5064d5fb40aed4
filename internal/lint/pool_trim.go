package lint

import (
	"fmt"

	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// Pool trimming: with CU_MEMPOOL_ATTR_RELEASE_THRESHOLD at 0 (the default of
// every pool, the device's default pool included), each synchronize after a
// cuMemFreeAsync returns the pool's free memory to the OS, and the next
// allocation maps it again. On an H200 an alloc+free+synchronize loop costs
// ~100-137 us instead of ~2-3.5 us.
//
// The rule replays the pools' release thresholds (cuMemPoolSetAttribute with
// attr 4 sets it to Size; a default pool whose handle the trace never saw
// cannot have been changed), remembers cuMemFreeAsync calls into pools whose
// threshold is 0, and looks at the first synchronize of the same process
// and device after them. It counts that synchronize as trimmed when it took
// more than trimFactor times the trace's idle synchronize and at least
// trimMinExcessNs more. Cost: the excess over the idle synchronize.
const (
	trimFactor      = 10
	trimMinExcessNs = 5000
	releaseAttr     = 4 // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
)

type poolTrim struct{}

var _ Rule = poolTrim{}

func (poolTrim) ID() string { return "pool-trim" }

func (poolTrim) Doc() string {
	return "frees into a pool with release threshold 0 followed by synchronizes far slower than an idle one"
}

type poolKey struct {
	pid    uint32
	dev    int32
	handle uint64
	isDflt bool
}

func (poolTrim) Check(f *Facts) []Finding {
	t := f.Trace
	threshold := map[[2]uint64]uint64{} // (pid, pool) -> threshold set
	type freed struct {
		event int
		pool  poolKey
	}
	pending := map[uint32][]freed{} // per process, since its last synchronize
	type acc struct {
		first, example int
		count          int
		cost, total    int64
		frees          int
	}
	by := map[poolKey]*acc{}
	var order []poolKey
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall || !e.Result.OK() {
			continue
		}
		switch {
		case e.API == trace.APIMemPoolSetAttribute && e.Flags == releaseAttr:
			threshold[[2]uint64{uint64(e.PID), e.Handle}] = e.Size
		case e.API == trace.APIMemFreeAsync:
			o := f.ByDestroy[i]
			if o == nil || (o.Pool == 0 && !o.DefaultPool) {
				continue
			}
			if o.Pool != 0 && threshold[[2]uint64{uint64(e.PID), o.Pool}] != 0 {
				continue
			}
			k := poolKey{pid: e.PID, dev: o.Device, handle: o.Pool, isDflt: o.DefaultPool}
			pending[e.PID] = append(pending[e.PID], freed{i, k})
		case e.API.Info().Category == trace.CategorySync:
			ps := pending[e.PID]
			if len(ps) == 0 {
				continue
			}
			// the frees this synchronize covers: same device, or unknown
			var hit *freed
			rest := ps[:0]
			nfree := 0
			for j := range ps {
				if e.Device == trace.NoDevice || ps[j].pool.dev == trace.NoDevice || ps[j].pool.dev == e.Device {
					if hit == nil {
						hit = &freed{ps[j].event, ps[j].pool}
					}
					nfree++
					continue
				}
				rest = append(rest, ps[j])
			}
			pending[e.PID] = rest
			if hit == nil {
				continue
			}
			d := f.CallNs(i)
			excess := d - f.IdleSyncNs
			if d <= trimFactor*f.IdleSyncNs || excess < trimMinExcessNs {
				continue
			}
			a := by[hit.pool]
			if a == nil {
				a = &acc{first: hit.event, example: i}
				by[hit.pool] = a
				order = append(order, hit.pool)
			}
			a.count++
			a.frees += nfree
			a.cost += excess
			a.total += d
			if d > f.CallNs(a.example) {
				a.example = i
			}
		}
	}
	var out []Finding
	for _, k := range order {
		a := by[k]
		fd := f.finding(poolTrim{}.ID(), Error, a.first, a.example)
		pool := fmt.Sprintf("pool %#x", k.handle)
		if k.isDflt {
			pool = "the default pool"
			if k.dev != trace.NoDevice {
				pool += fmt.Sprintf(" of device %d", k.dev)
			}
		}
		idle := "an idle synchronize of this trace takes " + report.Duration(float64(f.IdleSyncNs))
		if !f.IdleMeasured {
			idle = fmt.Sprintf("an idle synchronize takes about %s (none in this trace to measure)",
				report.Duration(float64(f.IdleSyncNs)))
		}
		fd.Count, fd.CostNs = a.count, a.cost
		fd.Message = fmt.Sprintf("%s after %s into %s (release threshold 0) took %s on average; %s: "+
			"each one returned the pool's free memory to the OS",
			plural(a.count, "synchronize"), plural(a.frees, "free"), pool,
			report.Duration(float64(a.total)/float64(a.count)), idle)
		fd.Fix = "keep freed memory in the pool: raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, e.g. " +
			"cuuint64_t max = UINT64_MAX; cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max) " +
			"(runtime: cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &max)) on the pool " +
			"from cuDeviceGetDefaultMemPool, once at start-up"
		out = append(out, fd)
	}
	return out
}
