package lint

import (
	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Where pools are trimmed. With CU_MEMPOOL_ATTR_RELEASE_THRESHOLD at 0 (the
// default of every pool, the device's default pool included), memory freed
// into a pool goes back to the OS at the next synchronize, or when the
// stream it was freed on is destroyed; the next allocation from the pool
// then maps memory again. Each of those calls costs tens of microseconds
// instead of hundreds of nanoseconds.
//
// The tracker replays each process's pools: release thresholds
// (cuMemPoolSetAttribute with attr 4 sets it to Size; a default pool whose
// handle the trace never saw cannot have been changed), cuMemFreeAsync calls
// into pools whose threshold is 0, and thresholds lowered to 0 on pools that
// hold freed memory. A trim candidate is the first synchronize of the same
// process and device after such causes, or a cuStreamDestroy of a stream
// such frees were made on. After the pass, each candidate is a TrimPoint
// when it took more than trimFactor times its baseline and at least
// trimMinExcessNs more; the baseline is the idle synchronize for
// synchronizes, the median cuStreamDestroy that was not a candidate for
// destroys. The first pool allocation from the same pool after a trim point
// is its regrowth, counted when it too took trimFactor times the median
// pool allocation (of those neither first from their pool nor right after a
// trim point).
const (
	trimFactor      = 10
	trimMinExcessNs = 5000
	releaseAttr     = 4 // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
	// FallbackStreamDestroyNs is the cuStreamDestroy baseline when every
	// destroy in the trace is a trim candidate (H200: ~2 us).
	FallbackStreamDestroyNs = 2000
	// FallbackPoolAllocNs is the pool allocation baseline when the trace has
	// no allocation to measure (H200: ~0.4-0.7 us).
	FallbackPoolAllocNs = 700
)

// PoolKey names a memory pool of one process: an explicit pool by handle, or
// a device's default pool (whose handle the trace may not know).
type PoolKey struct {
	PID         uint32
	Device      int32
	Handle      uint64
	DefaultPool bool
}

// Trim says why a call is taken to have trimmed a pool.
type Trim struct {
	Pool    PoolKey
	Cause   int // the first free (or threshold change) it covered: event index
	Frees   int // frees into release-threshold-0 pools it covered
	Lowered int // release thresholds lowered to 0 it covered
}

// TrimPoint is a call at which a pool returned its free memory to the OS.
type TrimPoint struct {
	Event      int // the synchronize or cuStreamDestroy
	Trim       Trim
	BaselineNs int64 // what the call costs without trimming
	// Measured is false when the trace had no call to measure BaselineNs
	// on and a fallback was used.
	Measured bool
	ExcessNs int64 // its duration less BaselineNs
	// Regrow is the pool allocation after it that mapped memory again, -1
	// when none was seen or it was not slow; RegrowExcessNs its excess over
	// the median pool allocation.
	Regrow         int
	RegrowExcessNs int64
}

type trimCause struct {
	event   int
	pool    PoolKey
	lowered bool
	stream  uint64
}

type trimCandidate struct {
	event int
	trim  Trim
}

type trimTracker struct {
	f          *Facts
	threshold  map[[2]uint64]uint64  // (pid, pool) -> release threshold set
	freedInto  map[[2]uint64]PoolKey // (pid, pool) -> pools memory was freed into
	causes     map[uint32][]trimCause
	candidates []trimCandidate
}

func newTrimTracker(f *Facts) *trimTracker {
	return &trimTracker{f: f, threshold: map[[2]uint64]uint64{}, freedInto: map[[2]uint64]PoolKey{},
		causes: map[uint32][]trimCause{}}
}

// step follows successful call i; it reports whether i is a trim candidate.
func (tt *trimTracker) step(i int, e *trace.Event) bool {
	switch {
	case e.API == trace.APIMemPoolSetAttribute && e.Flags == releaseAttr:
		pk := [2]uint64{uint64(e.PID), e.Handle}
		if k, ok := tt.freedInto[pk]; ok && e.Size == 0 && tt.threshold[pk] != 0 {
			tt.causes[e.PID] = append(tt.causes[e.PID], trimCause{event: i, pool: k, lowered: true})
		}
		tt.threshold[pk] = e.Size
	case e.API == trace.APIMemFreeAsync:
		o := tt.f.ByDestroy[i]
		if o == nil || (o.Pool == 0 && !o.DefaultPool) {
			return false
		}
		k := PoolKey{PID: e.PID, Device: o.Device, Handle: o.Pool, DefaultPool: o.DefaultPool}
		pk := [2]uint64{uint64(e.PID), o.Pool}
		if o.Pool != 0 {
			tt.freedInto[pk] = k
		}
		if o.Pool == 0 || tt.threshold[pk] == 0 {
			tt.causes[e.PID] = append(tt.causes[e.PID], trimCause{event: i, pool: k, stream: streamOf(e)})
		}
	case e.API == trace.APIStreamDestroy:
		return tt.take(i, e, func(c trimCause) bool { return !c.lowered && c.stream == e.Handle })
	case e.API.Info().Category == trace.CategorySync:
		return tt.take(i, e, func(c trimCause) bool { return covers(tt.f.Device(i), c.pool.Device) })
	}
	return false
}

// take consumes the causes call i releases, making it a candidate.
func (tt *trimTracker) take(i int, e *trace.Event, releases func(trimCause) bool) bool {
	cs := tt.causes[e.PID]
	var trim *Trim
	rest := cs[:0]
	for _, c := range cs {
		if !releases(c) {
			rest = append(rest, c)
			continue
		}
		if trim == nil {
			trim = &Trim{Pool: c.pool, Cause: c.event}
		}
		if c.lowered {
			trim.Lowered++
		} else {
			trim.Frees++
		}
	}
	tt.causes[e.PID] = rest
	if trim == nil {
		return false
	}
	tt.candidates = append(tt.candidates, trimCandidate{i, *trim})
	return true
}

// confirm turns the slow candidates into f.TrimPoints once the idle
// synchronize is known, and finds their regrowth allocations.
func (tt *trimTracker) confirm() {
	f := tt.f
	t := f.Trace
	isCandidate := map[int]bool{}
	for _, c := range tt.candidates {
		isCandidate[c.event] = true
	}
	var destroys []int64
	allocs := map[PoolKey][]int{} // pool allocations in trace order
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall || !e.Result.OK() {
			continue
		}
		switch e.API {
		case trace.APIStreamDestroy:
			if !isCandidate[i] {
				destroys = append(destroys, f.CallNs(i))
			}
		case trace.APIMemAllocAsync, trace.APIMemAllocFromPoolAsync:
			if o := f.ByCreate[i]; o != nil {
				k := PoolKey{PID: e.PID, Device: o.Device, Handle: o.Pool, DefaultPool: o.DefaultPool}
				allocs[k] = append(allocs[k], i)
			}
		}
	}
	destroyBase, destroyMeasured := int64(FallbackStreamDestroyNs), len(destroys) > 0
	if destroyMeasured {
		sortInt64(destroys)
		destroyBase = analysis.Percentile(destroys, 50)
	}
	syncAt := map[int]int{}
	for j, s := range f.Syncs {
		syncAt[s.Event] = j
	}
	for _, c := range tt.candidates {
		base, measured := f.IdleSyncNs, f.IdleMeasured
		if t.Events[c.event].API == trace.APIStreamDestroy {
			base, measured = destroyBase, destroyMeasured
		}
		d := f.CallNs(c.event)
		if d <= trimFactor*base || d-base < trimMinExcessNs {
			continue
		}
		f.TrimPoints = append(f.TrimPoints, TrimPoint{Event: c.event, Trim: c.trim, BaselineNs: base,
			Measured: measured, ExcessNs: d - base, Regrow: -1})
		if j, ok := syncAt[c.event]; ok {
			f.Syncs[j].Trimmed = true
		}
	}
	// regrowth: the first allocation from the pool after each trim point
	claimed := map[int]bool{}
	for j := range f.TrimPoints {
		tp := &f.TrimPoints[j]
		for _, a := range allocs[tp.Trim.Pool] {
			if a > tp.Event && !claimed[a] {
				claimed[a] = true
				tp.Regrow = a
				break
			}
		}
	}
	var normal []int64
	for _, as := range allocs {
		for n, a := range as {
			// the first allocation from a pool grows it too
			if n > 0 && !claimed[a] {
				normal = append(normal, f.CallNs(a))
			}
		}
	}
	allocBase := int64(FallbackPoolAllocNs)
	if len(normal) > 0 {
		sortInt64(normal)
		allocBase = analysis.Percentile(normal, 50)
	}
	f.trimNs = map[int]int64{}
	for j := range f.TrimPoints {
		tp := &f.TrimPoints[j]
		f.trimNs[tp.Event] = tp.ExcessNs
		if tp.Regrow < 0 {
			continue
		}
		d := f.CallNs(tp.Regrow)
		if d <= trimFactor*allocBase || d-allocBase < trimMinExcessNs {
			tp.Regrow = -1
			continue
		}
		tp.RegrowExcessNs = d - allocBase
		f.trimNs[tp.Regrow] = tp.RegrowExcessNs
	}
}
