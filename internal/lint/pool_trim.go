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
// Facts marks the trimmed synchronizes (Sync.Trim): it replays the pools'
// release thresholds (cuMemPoolSetAttribute with attr 4 sets it to Size; a
// default pool whose handle the trace never saw cannot have been changed),
// remembers cuMemFreeAsync calls into pools whose threshold is 0, and looks
// at the first synchronize of the same process and device after them. That
// synchronize is trimmed when it took more than trimFactor times the trace's
// idle synchronize and at least trimMinExcessNs more. The rule groups them
// by pool. Cost: the excess over the idle synchronize.
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
		frees          int
	}
	by := map[PoolKey]*acc{}
	var order []PoolKey
	for _, s := range f.Syncs {
		if s.Trim == nil {
			continue
		}
		i := s.Event
		d := f.CallNs(i)
		a := by[s.Trim.Pool]
		if a == nil {
			a = &acc{first: s.Trim.Free, example: i}
			by[s.Trim.Pool] = a
			order = append(order, s.Trim.Pool)
		}
		a.count++
		a.frees += s.Trim.Frees
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
