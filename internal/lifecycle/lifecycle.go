// Package lifecycle pairs the calls that create CUDA objects with the calls
// that destroy them, giving each object of a trace a lifetime, a device, and
// the site that made it. Reports, lint rules and the exporters' lifetime
// tracks are built on it.
//
// Objects are keyed by (process, object kind, handle). A handle may be reused
// once its object is destroyed; failed calls (Result != CUDA_SUCCESS) create
// and destroy nothing. Primary contexts are reference counted:
// cuDevicePrimaryCtxRetain creates the context on its first retain and
// counts later ones, cuDevicePrimaryCtxRelease ends it when the count drops
// to zero, cuDevicePrimaryCtxReset ends it at once. Destroying a context ends
// the streams, events, allocations, pools and modules created while it was
// current (EndContext). Run AttributeDevices first when devices matter.
package lifecycle

import (
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// ChurnWindow is the longest lifetime of an object counted as churn: created
// and destroyed again within 1 ms.
const ChurnWindow int64 = 1_000_000

// EndReason says how an object's life ended.
type EndReason uint8

const (
	// EndAlive: the object was still alive when the trace ended.
	EndAlive EndReason = iota
	// EndDestroyed: a destroy (or last release) call ended it.
	EndDestroyed
	// EndContext: the context it was created in was destroyed.
	EndContext
	// EndReplaced: its handle was returned by a create again without a
	// destroy in between (a destroy was not recorded, e.g. dropped).
	EndReplaced
)

var endNames = [...]string{"alive", "destroyed", "context-destroyed", "replaced"}

// String returns the reason's name.
func (r EndReason) String() string {
	if int(r) < len(endNames) {
		return endNames[r]
	}
	return "?"
}

// Object is one CUDA object's life.
type Object struct {
	Kind   trace.Object
	PID    uint32
	Handle uint64
	Device int32 // device of the create call, trace.NoDevice when unknown
	// Create is the index in Trace.Events of the call that created it (for a
	// primary context, its first retain). Destroy is the index of the call
	// that ended it, -1 when it is alive at the end, ended with its context
	// (see Reason) or was replaced.
	Create  int
	Destroy int
	// Start is the create call's Start; End is the destroy call's End, the
	// context destroy's End, the replacing create's Start, or (alive) the
	// last time seen in the process.
	Start, End int64
	Reason     EndReason
	TID        uint32 // thread of the create call
	Caller     uint64 // return address of the create call
	Bytes      uint64 // allocations: size requested
	// Pool is the pool an allocation came from: cuMemAllocFromPoolAsync's
	// pool, or for cuMemAllocAsync the device's current pool (set by
	// cuDeviceSetMemPool) else its default pool. DefaultPool is set when the
	// allocation came from the device's default pool; Pool is then its handle
	// when the trace saw cuDeviceGetDefaultMemPool, else 0.
	Pool        uint64
	DefaultPool bool
	Stream      uint64 // stream argument of the create call (async allocations)
	Context     uint64 // context current on the creating thread, 0 when none
	Primary     bool   // a primary context (retain/release counted)
	Retains     int    // primary contexts: retains seen
	Uses        int    // successful calls naming the object (role use/get; streams: also as stream argument)
	Flags       uint64 // flags argument of the create call
}

// Lifetime returns End-Start, never negative.
func (o *Object) Lifetime() int64 {
	if o.End > o.Start {
		return o.End - o.Start
	}
	return 0
}

// Alive reports whether the object outlived the trace.
func (o *Object) Alive() bool { return o.Reason == EndAlive }

// Churn reports whether the object was destroyed by a call within window of
// its creation (use ChurnWindow).
func (o *Object) Churn(window int64) bool {
	return o.Reason == EndDestroyed && o.Lifetime() <= window
}

// Problem is a call the analysis could not pair.
type Problem struct {
	Event  int // index into Trace.Events
	Kind   trace.Object
	Handle uint64
	Reason string
}

// Analysis is the lifecycle of every object of a trace.
type Analysis struct {
	// Objects in the order of their create calls.
	Objects []Object
	// Problems: destroys and releases of objects the trace never saw
	// created (made before recording started, or already destroyed).
	Problems []Problem
}

type objectKey struct {
	pid    uint32
	kind   trace.Object
	handle uint64
}

type devKey struct {
	pid uint32
	dev int32
}

// Analyze builds the lifecycle of every object in t. Events must be in
// trace.SortEvents order.
func Analyze(t *trace.Trace) *Analysis {
	creates := 0
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == trace.KindCall && e.Result.OK() {
			if r := e.API.Info().Role; r == trace.RoleCreate || r == trace.RoleRetain {
				creates++
			}
		}
	}
	a := &Analysis{Objects: make([]Object, 0, creates)}
	live := map[objectKey]int{} // index into a.Objects
	primary := map[devKey]int{} // live primary context per device
	defaultPool := map[devKey]uint64{}
	currentPool := map[devKey]uint64{}
	byContext := map[objectKey][]int{} // context -> objects created in it
	ctxs := newContextTracker()
	lastSeen := map[uint32]int64{}

	end := func(idx int, ev int, at int64, reason EndReason) {
		o := &a.Objects[idx]
		o.Destroy, o.End, o.Reason = ev, at, reason
		delete(live, objectKey{o.PID, o.Kind, o.Handle})
		if o.Kind == trace.ObjectContext {
			if o.Primary {
				if j, ok := primary[devKey{o.PID, o.Device}]; ok && j == idx {
					delete(primary, devKey{o.PID, o.Device})
				}
			}
			ck := objectKey{o.PID, trace.ObjectContext, o.Handle}
			for _, j := range byContext[ck] {
				c := &a.Objects[j]
				if c.Reason == EndAlive && c.Start <= at && j != idx {
					c.Destroy, c.End, c.Reason = -1, at, EndContext
					delete(live, objectKey{c.PID, c.Kind, c.Handle})
				}
			}
			delete(byContext, ck)
		}
	}
	create := func(i int, e *trace.Event, kind trace.Object) int {
		k := objectKey{e.PID, kind, e.Handle}
		if j, ok := live[k]; ok {
			end(j, -1, e.Start, EndReplaced)
		}
		o := Object{Kind: kind, PID: e.PID, Handle: e.Handle, Device: e.Device, Create: i, Destroy: -1,
			Start: e.Start, End: e.End, TID: e.TID, Caller: e.Caller, Flags: e.Flags,
			Context: ctxs.current(e.PID, e.TID)}
		a.Objects = append(a.Objects, o)
		idx := len(a.Objects) - 1
		live[k] = idx
		if kind != trace.ObjectContext && o.Context != 0 {
			ck := objectKey{e.PID, trace.ObjectContext, o.Context}
			byContext[ck] = append(byContext[ck], idx)
		}
		return idx
	}
	problem := func(i int, e *trace.Event, kind trace.Object, reason string) {
		a.Problems = append(a.Problems, Problem{Event: i, Kind: kind, Handle: e.Handle, Reason: reason})
	}

	for i := range t.Events {
		e := &t.Events[i]
		if e.End > lastSeen[e.PID] {
			lastSeen[e.PID] = e.End
		}
		if e.Start > lastSeen[e.PID] {
			lastSeen[e.PID] = e.Start
		}
		if e.Kind != trace.KindCall || !e.Result.OK() {
			continue
		}
		info := e.API.Info()
		dk := devKey{e.PID, e.Device}
		switch e.API {
		case trace.APIDevicePrimaryCtxRetain:
			if j, ok := primary[dk]; ok && e.Device != trace.NoDevice {
				a.Objects[j].Retains++
				break
			}
			if e.Handle == 0 {
				break
			}
			if j, ok := live[objectKey{e.PID, trace.ObjectContext, e.Handle}]; ok && a.Objects[j].Primary {
				a.Objects[j].Retains++
				break
			}
			j := create(i, e, trace.ObjectContext)
			a.Objects[j].Primary, a.Objects[j].Retains = true, 1
			if e.Device != trace.NoDevice {
				primary[dk] = j
			}
		case trace.APIDevicePrimaryCtxRelease, trace.APIDevicePrimaryCtxReset:
			j, ok := primary[dk]
			if !ok {
				if e.API == trace.APIDevicePrimaryCtxRelease {
					problem(i, e, trace.ObjectContext, "primary context released but never retained")
				}
				break
			}
			a.Objects[j].Retains--
			if e.API == trace.APIDevicePrimaryCtxReset || a.Objects[j].Retains <= 0 {
				end(j, i, e.End, EndDestroyed)
			}
		case trace.APIDeviceGetDefaultMemPool:
			defaultPool[dk] = e.Handle
		case trace.APIDeviceSetMemPool:
			currentPool[dk] = e.Handle
		default:
			switch info.Role {
			case trace.RoleCreate:
				if e.Handle == 0 || info.Object == trace.ObjectNone {
					break
				}
				j := create(i, e, info.Object)
				o := &a.Objects[j]
				switch e.API {
				case trace.APIMemAllocFromPoolAsync:
					o.Pool = e.Aux
					if dp, ok := defaultPool[dk]; ok && dp == e.Aux {
						o.DefaultPool = true
					}
				case trace.APIMemAllocAsync:
					if p, ok := currentPool[dk]; ok {
						o.Pool = p
						o.DefaultPool = p == defaultPool[dk] && p != 0
					} else {
						o.Pool, o.DefaultPool = defaultPool[dk], true
					}
				}
				switch info.Object {
				case trace.ObjectAllocation, trace.ObjectHostAllocation, trace.ObjectManagedAllocation:
					o.Bytes = e.Size
					o.Stream = e.Stream
				case trace.ObjectStream:
					o.Stream = e.Handle
				}
			case trace.RoleDestroy:
				if e.Handle == 0 {
					break // cuMemFree(0) and friends do nothing
				}
				j, ok := live[objectKey{e.PID, info.Object, e.Handle}]
				if !ok && info.Object == trace.ObjectAllocation {
					j, ok = live[objectKey{e.PID, trace.ObjectManagedAllocation, e.Handle}]
				}
				if !ok {
					problem(i, e, info.Object, "destroy of an object not created in the trace")
					break
				}
				end(j, i, e.End, EndDestroyed)
			case trace.RoleUse, trace.RoleGet:
				if j, ok := live[objectKey{e.PID, info.Object, e.Handle}]; ok && e.Handle != 0 {
					a.Objects[j].Uses++
				}
			}
			// stream-ordered calls use their stream too
			if e.Stream > 2 && !(info.Object == trace.ObjectStream && e.Handle == e.Stream) {
				if j, ok := live[objectKey{e.PID, trace.ObjectStream, e.Stream}]; ok {
					a.Objects[j].Uses++
				}
			}
		}
		ctxs.step(e)
	}
	for j := range a.Objects {
		o := &a.Objects[j]
		if o.Reason == EndAlive {
			o.End = lastSeen[o.PID]
			if p := t.Process(o.PID); p != nil && p.End > o.End {
				o.End = p.End
			}
		}
	}
	return a
}

// Alive returns the objects alive at the end of the trace.
func (a *Analysis) Alive() []*Object {
	var out []*Object
	for i := range a.Objects {
		if a.Objects[i].Alive() {
			out = append(out, &a.Objects[i])
		}
	}
	return out
}

// KindSummary sums up the objects of one kind.
type KindSummary struct {
	Kind      trace.Object
	Created   int
	Destroyed int // by a destroy call
	Implicit  int // ended with their context or replaced
	Alive     int // alive at the end of the trace
	Churn     int // destroyed within ChurnWindow of creation
	// Lifetimes of the destroyed objects (by a call), sorted ascending.
	Lifetimes []int64
	Bytes     uint64 // total bytes created (allocations)
}

// Summary returns one KindSummary per object kind that occurs, in
// trace.Objects order.
func (a *Analysis) Summary() []KindSummary { return a.SummaryWhere(nil) }

// SummaryWhere is Summary over the objects keep accepts (all when nil), for
// per-device or per-process tables.
func (a *Analysis) SummaryWhere(keep func(*Object) bool) []KindSummary {
	by := map[trace.Object]*KindSummary{}
	for i := range a.Objects {
		o := &a.Objects[i]
		if keep != nil && !keep(o) {
			continue
		}
		s := by[o.Kind]
		if s == nil {
			s = &KindSummary{Kind: o.Kind}
			by[o.Kind] = s
		}
		s.Created++
		s.Bytes += o.Bytes
		switch o.Reason {
		case EndDestroyed:
			s.Destroyed++
			s.Lifetimes = append(s.Lifetimes, o.Lifetime())
			if o.Churn(ChurnWindow) {
				s.Churn++
			}
		case EndAlive:
			s.Alive++
		default:
			s.Implicit++
		}
	}
	var out []KindSummary
	for _, k := range trace.Objects() {
		if s := by[k]; s != nil {
			sort.Slice(s.Lifetimes, func(i, j int) bool { return s.Lifetimes[i] < s.Lifetimes[j] })
			out = append(out, *s)
		}
	}
	return out
}
