package lint

import (
	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantile"
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
// such frees were made on. A candidate is a trimPoint when it took more
// than trimFactor times its baseline and at least trimMinExcessNs more; the
// baseline is the idle synchronize for synchronizes, the median
// cuStreamDestroy that was not a candidate for destroys (both measured by
// the first pass over the trace). The first pool allocation from the same
// pool after a trim point is its regrowth, counted when it too took
// trimFactor times the median pool allocation (of those neither first from
// their pool nor right after a trim point; measured by a second pass, made
// only when the trace has a trim point).
const (
	trimFactor      = 10
	trimMinExcessNs = 5000
	releaseAttr     = 4 // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
	// fallbackStreamDestroyNs is the cuStreamDestroy baseline when every
	// destroy in the trace is a trim candidate (H200: ~2 us).
	fallbackStreamDestroyNs = 2000
	// fallbackPoolAllocNs is the pool allocation baseline when the trace has
	// no allocation to measure (H200: ~0.4-0.7 us).
	fallbackPoolAllocNs = 700
)

// poolKey names a memory pool of one process: an explicit pool by handle, or
// a device's default pool (whose handle the trace may not know).
type poolKey struct {
	PID         uint32
	Device      int32
	Handle      uint64
	DefaultPool bool
}

// trimReason says why a call is taken to have trimmed a pool.
type trimReason struct {
	Pool    poolKey
	Cause   int // the first free (or threshold change) it covered: event index
	Frees   int // frees into release-threshold-0 pools it covered
	Lowered int // release thresholds lowered to 0 it covered
}

// trimPoint is a call at which a pool returned its free memory to the OS.
type trimPoint struct {
	Event      int // the synchronize or cuStreamDestroy
	Trim       trimReason
	BaselineNs int64 // what the call costs without trimming
	// Measured is false when the trace had no call to measure BaselineNs
	// on and a fallback was used.
	Measured bool
	ExcessNs int64 // its duration less BaselineNs
	// RegrowExcessNs is the excess over the median pool allocation of the
	// allocation after it that mapped the memory again (the Event whose
	// Regrow it is), 0 until one was seen and when it was not slow.
	RegrowExcessNs int64

	at call // the trimming call
}

// trimCause is a free into a release-threshold-0 pool, or a lowering of a
// pool's threshold to 0, not yet released by a synchronize or destroy;
// causes of one pool, kind and stream are counted in one (n), under the
// first one's event.
type trimCause struct {
	event   int
	pool    poolKey
	lowered bool
	stream  uint64
	n       int
}

// trimTracker replays each process's pools (see the top of this file). Its
// memory is per pool and stream, and per trim point waiting for its pool's
// next allocation.
type trimTracker struct {
	f         *Facts
	pass      pass
	threshold map[[2]uint64]uint64  // (pid, pool) -> release threshold set
	freedInto map[[2]uint64]poolKey // (pid, pool) -> pools memory was freed into
	causes    map[uint32][]trimCause
	// trimPass and rulesPass: the trim points waiting for the allocation
	// that re-grows their pool, in trace order; the pools allocated from;
	// (trimPass) the durations of the other pool allocations
	regrowing map[poolKey][]*trimPoint
	allocated map[poolKey]bool
	allocs    *quantile.Sketch
}

func newTrimTracker(f *Facts, p pass) *trimTracker {
	return &trimTracker{f: f, pass: p, threshold: map[[2]uint64]uint64{}, freedInto: map[[2]uint64]poolKey{},
		causes: map[uint32][]trimCause{}, regrowing: map[poolKey][]*trimPoint{}, allocated: map[poolKey]bool{}}
}

func (tt *trimTracker) cause(pid uint32, c trimCause) {
	cs := tt.causes[pid]
	for j := range cs {
		if cs[j].pool == c.pool && cs[j].lowered == c.lowered && cs[j].stream == c.stream {
			cs[j].n++
			return
		}
	}
	c.n = 1
	tt.causes[pid] = append(cs, c)
}

// step follows successful call ev; it reports whether ev is a trim
// candidate, and past the first pass sets ev's Trim and Regrow.
func (tt *trimTracker) step(ev *Event) bool {
	e := ev.Event.Event
	switch {
	case e.API == trace.APIMemPoolSetAttribute && e.Flags == releaseAttr:
		pk := [2]uint64{uint64(e.PID), e.Handle}
		if k, ok := tt.freedInto[pk]; ok && e.Size == 0 && tt.threshold[pk] != 0 {
			tt.cause(e.PID, trimCause{event: ev.Index, pool: k, lowered: true})
		}
		tt.threshold[pk] = e.Size
	case e.API == trace.APIMemFreeAsync:
		if ev.Object == analysis.NoObject {
			return false
		}
		o := &ev.Analysis().Objects[ev.Object]
		if o.Destroy != ev.Index || (o.Pool == 0 && !o.DefaultPool) {
			return false
		}
		k := poolKey{PID: e.PID, Device: o.Device, Handle: o.Pool, DefaultPool: o.DefaultPool}
		pk := [2]uint64{uint64(e.PID), o.Pool}
		if o.Pool != 0 {
			tt.freedInto[pk] = k
		}
		if o.Pool == 0 || tt.threshold[pk] == 0 {
			tt.cause(e.PID, trimCause{event: ev.Index, pool: k, stream: analysis.StreamOf(e)})
		}
	case e.API == trace.APIMemAllocAsync || e.API == trace.APIMemAllocFromPoolAsync:
		if tt.pass != firstPass && ev.Created() {
			tt.alloc(ev)
		}
	case e.API == trace.APIStreamDestroy:
		return tt.take(ev, func(c trimCause) bool { return !c.lowered && c.stream == e.Handle })
	case e.API.Info().Category == trace.CategorySync:
		return tt.take(ev, func(c trimCause) bool { return analysis.Covers(ev.Device, c.pool.Device) })
	}
	return false
}

// take consumes the causes call ev releases, making it a candidate, and
// past the first pass a trimPoint when it was slow.
func (tt *trimTracker) take(ev *Event, releases func(trimCause) bool) bool {
	cs := tt.causes[ev.PID]
	if len(cs) == 0 { // most calls: nothing to release
		return false
	}
	var trim *trimReason
	rest := cs[:0]
	for _, c := range cs {
		if !releases(c) {
			rest = append(rest, c)
			continue
		}
		if trim == nil {
			trim = &trimReason{Pool: c.pool, Cause: c.event}
		}
		if c.lowered {
			trim.Lowered += c.n
		} else {
			trim.Frees += c.n
		}
	}
	tt.causes[ev.PID] = rest
	if trim == nil {
		return false
	}
	if tt.pass == firstPass { // a candidate: slow or not, the baselines will say
		return true
	}
	f := tt.f
	base, measured := f.IdleSyncNs, f.IdleMeasured
	if ev.API == trace.APIStreamDestroy {
		base, measured = f.destroyNs, f.destroyMeasured
	}
	if d := ev.Duration; slow(d, base) {
		tp := &trimPoint{Event: ev.Index, Trim: *trim, BaselineNs: base, Measured: measured, ExcessNs: d - base, at: callOf(ev)}
		ev.Trim, ev.TrimNs = tp, tp.ExcessNs
		tt.regrowing[trim.Pool] = append(tt.regrowing[trim.Pool], tp)
	}
	return true
}

// alloc follows a pool allocation: the first after a trim point of its
// pool is the trim's regrowth (slow, in the rules' pass: ev.Regrow); the
// others but the pool's first are what a pool allocation costs (trimPass).
func (tt *trimTracker) alloc(ev *Event) {
	o := &ev.Analysis().Objects[ev.Object]
	k := poolKey{PID: ev.PID, Device: o.Device, Handle: o.Pool, DefaultPool: o.DefaultPool}
	first := !tt.allocated[k]
	tt.allocated[k] = true
	if q := tt.regrowing[k]; len(q) > 0 {
		tp := q[0]
		if len(q) == 1 {
			delete(tt.regrowing, k)
		} else {
			tt.regrowing[k] = q[1:]
		}
		if d := ev.Duration; tt.pass == rulesPass && slow(d, tt.f.allocNs) {
			tp.RegrowExcessNs = d - tt.f.allocNs
			ev.Regrow, ev.TrimNs = tp, tp.RegrowExcessNs
		}
		return
	}
	if !first && tt.allocs != nil {
		tt.allocs.Add(ev.Duration)
	}
}
