package lint

import (
	"fmt"
	"strings"

	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// Pool trimming: with CU_MEMPOOL_ATTR_RELEASE_THRESHOLD at 0 (the default of
// every pool, the device's default pool included), each synchronize after a
// cuMemFreeAsync returns the pool's free memory to the OS, and the next
// allocation maps it again. On an H200 an alloc+free+synchronize loop costs
// ~100-137 us instead of ~2-3.5 us.
//
// Facts marks the trimmed synchronizes (Sync.Trim): it replays the pools'
// release thresholds (cuMemPoolSetAttribute with attr 4 sets it to Size; a
// default pool whose handle the trace never saw cannot have been changed),
// remembers cuMemFreeAsync calls into pools whose threshold is 0 (and
// thresholds lowered to 0 on pools holding freed memory), and looks at the
// first synchronize of the same process and device after them. That
// synchronize is trimmed when it took more than trimFactor times the trace's
// idle synchronize (measured without such synchronizes) and at least
// trimMinExcessNs more. The rule groups them by pool and by the site of the
// synchronize (where the time is lost). Cost: the excess over the idle
// synchronize.
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

// PoolKey names a memory pool of one process: an explicit pool by handle, or
// a device's default pool (whose handle the trace may not know).
type PoolKey struct {
	PID         uint32
	Device      int32
	Handle      uint64
	DefaultPool bool
}

func (poolTrim) Check(f *Facts) []Finding {
	type acc struct {
		first, example int
		count          int
		cost, total    int64
		frees, lowered int
	}
	type key struct {
		PoolKey
		Site
	}
	by := map[key]*acc{}
	var order []key
	for _, s := range f.Syncs {
		if s.Trim == nil {
			continue
		}
		i := s.Event
		d := f.CallNs(i)
		k := key{s.Trim.Pool, f.SiteOf(i)}
		a := by[k]
		if a == nil {
			a = &acc{first: i, example: i}
			by[k] = a
			order = append(order, k)
		}
		a.count++
		a.frees += s.Trim.Frees
		a.lowered += s.Trim.Lowered
		a.cost += d - f.IdleSyncNs
		a.total += d
		if d > f.CallNs(a.example) {
			a.example = i
		}
	}
	var out []Finding
	for _, k := range order {
		a := by[k]
		fd := f.finding(poolTrim{}.ID(), Error, a.first, a.example)
		pool := fmt.Sprintf("pool %#x", k.Handle)
		if k.DefaultPool {
			pool = "the default pool"
			if k.Device != trace.NoDevice {
				pool += fmt.Sprintf(" of device %d", k.Device)
			}
		}
		idle := "an idle synchronize of this trace takes " + report.Duration(float64(f.IdleSyncNs))
		if !f.IdleMeasured {
			idle = fmt.Sprintf("an idle synchronize takes about %s (none in this trace to measure)",
				report.Duration(float64(f.IdleSyncNs)))
		}
		fd.Count, fd.CostNs = a.count, a.cost
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
		after := strings.Join(causes, " and ")
		fd.Message = fmt.Sprintf("%s after %s took %s on average; %s: "+
			"each one returned the pool's free memory to the OS",
			plural(a.count, "synchronize"), after,
			report.Duration(float64(a.total)/float64(a.count)), idle)
		fd.Fix = "keep freed memory in the pool: raise CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, e.g. " +
			"cuuint64_t max = UINT64_MAX; cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max) " +
			"(runtime: cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &max)) on the pool " +
			"from cuDeviceGetDefaultMemPool, once at start-up"
		out = append(out, fd)
	}
	return out
}
