package analysis

import (
	"slices"

	"github.com/cuprof/cuprof/trace"
)

// errCaptureInvalidated is CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: the
// answer of a cuStreamEndCapture whose capture a prohibited call broke; the
// capture has ended all the same, without a graph.
const errCaptureInvalidated trace.Result = 901

// objects applies a call to the object lifecycles. Objects are keyed by
// (process, object kind, handle); a handle may be reused once its object
// ended. Failed calls create and destroy nothing, except that a
// cuStreamEndCapture failing because the capture was invalidated still ends
// the capture.
func (tr *Tracker) objects(i int, e *trace.Event, ev *Event, th *threadState) {
	if !e.Result.OK() {
		if e.API == trace.APIStreamEndCapture && e.Result == errCaptureInvalidated {
			tr.auxEffect(i, e, ev, factsOf(e.API))
		}
		return
	}
	a := tr.a
	info := factsOf(e.API)
	dk := devKey{e.PID, ev.Device}
	switch e.API {
	case trace.APIDevicePrimaryCtxRetain:
		// cuDevicePrimaryCtxRetain creates the context on its first retain
		// and counts later ones
		if j, ok := tr.primary[dk]; ok && ev.Device != trace.NoDevice {
			a.Objects[j].Retains++
			ev.Object = j
			return
		}
		if e.Handle == 0 {
			return
		}
		if j, ok := tr.live.get(objectKey{e.PID, trace.ObjectContext, e.Handle}); ok && a.Objects[j].Primary {
			a.Objects[j].Retains++
			ev.Object = j
			return
		}
		j := tr.create(i, e, ev, trace.ObjectContext)
		a.Objects[j].Primary, a.Objects[j].Retains = true, 1
		if ev.Device != trace.NoDevice {
			tr.primary[dk] = j
		}
	case trace.APIDevicePrimaryCtxRelease, trace.APIDevicePrimaryCtxReset:
		// the last release ends it, a reset ends it at once
		j, ok := tr.primary[dk]
		if !ok {
			if e.API == trace.APIDevicePrimaryCtxRelease {
				tr.problem(i, e, trace.ObjectContext, "primary context released but never retained")
			}
			return
		}
		ev.Object = j
		a.Objects[j].Retains--
		if e.API == trace.APIDevicePrimaryCtxReset || a.Objects[j].Retains <= 0 {
			tr.end(j, i, e.End, EndDestroyed, ev)
		}
	case trace.APIDeviceGetDefaultMemPool:
		tr.defaultPool[dk] = e.Handle
	case trace.APIDeviceSetMemPool:
		tr.currentPool[dk] = e.Handle
	default:
		switch info.Role {
		case trace.RoleCreate:
			if e.Handle == 0 || info.Object == trace.ObjectNone {
				break
			}
			j := tr.create(i, e, ev, info.Object)
			tr.adopt(i, e, j, info)
			o := &a.Objects[j]
			switch e.API {
			case trace.APIMemAllocFromPoolAsync:
				o.Pool = e.Aux
				if dp, ok := tr.defaultPool[dk]; ok && dp == e.Aux {
					o.DefaultPool = true
				}
			case trace.APIMemAllocAsync:
				if p, ok := tr.currentPool[dk]; ok {
					o.Pool = p
					o.DefaultPool = p == tr.defaultPool[dk] && p != 0
				} else {
					o.Pool, o.DefaultPool = tr.defaultPool[dk], true
				}
			}
			switch {
			case IsAllocation(info.Object):
				o.Bytes = e.Size
				o.Stream = e.Stream
			case hasBytes(info.Object):
				o.Bytes = e.Size
			case info.Object == trace.ObjectStream || info.Object == trace.ObjectCapture:
				o.Stream = e.Handle
			}
		case trace.RoleDestroy, trace.RoleRelease:
			// a release of anything but a primary context (cuMemRelease of
			// a physical allocation) ends the handle's life: the memory
			// behind it lives on in its mappings, which count on their own
			if e.Handle == 0 {
				break // cuMemFree(0) and friends do nothing
			}
			j, ok := tr.live.get(objectKey{e.PID, info.Object, e.Handle})
			if ok && info.Role == trace.RoleRelease && a.Objects[j].Retains > 0 {
				a.Objects[j].Retains-- // a cuMemRetainAllocationHandle's reference
				ev.Object = j
				break
			}
			if !ok && info.Object == trace.ObjectAllocation {
				// cuMemFree frees managed memory too
				j, ok = tr.live.get(objectKey{e.PID, trace.ObjectManagedAllocation, e.Handle})
			}
			if !ok {
				tr.problem(i, e, info.Object, "destroy of an object not created in the trace")
				break
			}
			ev.Object = j
			size := a.Objects[j].Bytes
			tr.end(j, i, e.End, EndDestroyed, ev)
			if info.Object == trace.ObjectMapping && e.Size > size {
				// one cuMemUnmap may unmap several mappings of a range
				tr.unmapRest(i, e, ev, e.Handle+size, e.Handle+e.Size)
			}
		case trace.RoleGet:
			if tr.use(e.PID, info.Object, e.Handle, ev) || e.Handle == 0 || !madeByGet(info) {
				break
			}
			// the first get of a library's kernel or module, or of a
			// kernel's or module's function, starts its life: it ends
			// with what it came from
			j := tr.create(i, e, ev, info.Object)
			tr.adopt(i, e, j, info)
		case trace.RoleUse:
			tr.use(e.PID, info.Object, e.Handle, ev)
		case trace.RoleRetain:
			// another reference to a live object (cuMemRetainAllocationHandle):
			// one more release before it ends
			if tr.use(e.PID, info.Object, e.Handle, ev) {
				a.Objects[ev.Object].Retains++
			}
		}
		if info.AuxObject != trace.ObjectNone && e.Aux != 0 { // (most calls name no second object)
			tr.auxEffect(i, e, ev, info)
		}
		// stream-ordered calls use their stream too
		if !IsDefaultStream(e.Stream) && !(info.Object == trace.ObjectStream && e.Handle == e.Stream) {
			if j, ok := tr.live.get(objectKey{e.PID, trace.ObjectStream, e.Stream}); ok {
				a.Objects[j].Uses++
			}
		}
	}
}

// use counts a use of the live object (kind, h) and makes it the event's;
// it reports whether there was one.
func (tr *Tracker) use(pid uint32, kind trace.Object, h uint64, ev *Event) bool {
	if h == 0 || kind == trace.ObjectNone {
		return false
	}
	if j, ok := tr.live.get(objectKey{pid, kind, h}); ok {
		tr.a.Objects[j].Uses++
		ev.Object = j
		return true
	}
	return false
}

// auxEffect applies what a call does to the second object its Aux names
// (trace.APIInfo's AuxObject and AuxRole): a use or get counts a use of it,
// a destroy ends it (cuStreamEndCapture ends the stream's capture).
// Event.AuxObject is that object.
func (tr *Tracker) auxEffect(i int, e *trace.Event, ev *Event, info *apiFacts) {
	if info.AuxObject == trace.ObjectNone || e.Aux == 0 {
		return
	}
	j, ok := tr.live.get(objectKey{e.PID, info.AuxObject, e.Aux})
	if !ok {
		if info.AuxRole == trace.RoleDestroy {
			tr.problemAt(i, e, info.AuxObject, e.Aux, "destroy of an object not created in the trace")
		}
		return
	}
	ev.AuxObject = j
	switch info.AuxRole {
	case trace.RoleUse, trace.RoleGet:
		tr.a.Objects[j].Uses++
	case trace.RoleDestroy, trace.RoleRelease:
		tr.end(j, i, e.End, EndDestroyed, ev)
		ev.Ended = append(ev.Ended, j)
	}
}

// madeByGet reports whether a get of an object not seen yet starts its
// life: a library's kernels and modules, a kernel's or module's functions
// are handed out by their first get, not created by a call of their own.
func madeByGet(info *apiFacts) bool {
	switch info.Object {
	case trace.ObjectKernel, trace.ObjectFunction:
		return true
	case trace.ObjectModule:
		return info.AuxObject == trace.ObjectLibrary
	}
	return false
}

// ownedBy reports whether an object of kind k made from one of kind from
// ends when that one ends: a library's kernels and modules when it is
// unloaded, a kernel's or module's functions with them, a capture with its
// stream. (A graph exec outlives its graph; a mapping its physical handle.)
func ownedBy(k, from trace.Object) bool {
	switch k {
	case trace.ObjectKernel:
		return from == trace.ObjectLibrary
	case trace.ObjectModule:
		return from == trace.ObjectLibrary
	case trace.ObjectFunction:
		return from == trace.ObjectKernel || from == trace.ObjectModule
	case trace.ObjectCapture:
		return from == trace.ObjectStream
	}
	return false
}

// adopt records what object j (just created by event i) was made from: the
// object its Aux names (a graph exec's graph, a mapping's physical memory,
// a kernel's library, a function's kernel or module), or a capture's
// stream; j ends with it when it owns j (ownedBy).
func (tr *Tracker) adopt(i int, e *trace.Event, j ObjectID, info *apiFacts) {
	o := &tr.a.Objects[j]
	from, h := info.AuxObject, e.Aux
	if o.Kind == trace.ObjectCapture {
		from, h = trace.ObjectStream, e.Handle
	}
	if from == trace.ObjectNone || h == 0 {
		return
	}
	o.Parent = h
	if !ownedBy(o.Kind, from) {
		return
	}
	pk := objectKey{o.PID, from, h}
	if _, ok := tr.live.get(pk); !ok {
		return // what it came from was never seen: nothing to end it
	}
	tr.addMember(&tr.owned, pk, j, i)
}

// unmapRest ends the live mappings of e's process that start in [from, to):
// the rest of a range one cuMemUnmap unmapped.
func (tr *Tracker) unmapRest(i int, e *trace.Event, ev *Event, from, to uint64) {
	var hit []uint64
	for h := range tr.mappings[e.PID] {
		if h >= from && h < to {
			hit = append(hit, h)
		}
	}
	slices.Sort(hit)
	for _, h := range hit {
		if j, ok := tr.live.get(objectKey{e.PID, trace.ObjectMapping, h}); ok {
			tr.end(j, i, e.End, EndDestroyed, ev)
			ev.Ended = append(ev.Ended, j)
		}
	}
}

// contextBound reports whether objects of kind k belong to the context
// current at their creation and end with it. Libraries and their kernels,
// graphs, physical memory, address ranges and mappings belong to the
// process (or a device), not to a context.
func contextBound(k trace.Object) bool {
	switch k {
	case trace.ObjectContext, trace.ObjectLibrary, trace.ObjectKernel, trace.ObjectGraph,
		trace.ObjectPhysicalMemory, trace.ObjectAddressRange, trace.ObjectMapping:
		return false
	}
	return true
}

// hasBytes reports whether objects of kind k record a byte count besides
// allocations: physical memory, reserved ranges, host registrations.
func hasBytes(k trace.Object) bool {
	switch k {
	case trace.ObjectPhysicalMemory, trace.ObjectAddressRange, trace.ObjectHostRegistration:
		return true
	}
	return false
}

func (tr *Tracker) create(i int, e *trace.Event, ev *Event, kind trace.Object) ObjectID {
	a := tr.a
	k := objectKey{e.PID, kind, e.Handle}
	if j, ok := tr.live.get(k); ok {
		tr.end(j, i, e.Start, EndReplaced, ev)
		ev.Ended = append(ev.Ended, j)
	}
	var j ObjectID
	if n := len(tr.freeObjects); n > 0 {
		j = tr.freeObjects[n-1]
		tr.freeObjects = tr.freeObjects[:n-1]
	} else {
		a.Objects = append(a.Objects, Object{})
		j = ObjectID(len(a.Objects) - 1)
	}
	// Written in its row field by field: an Object literal copied into the
	// row stalled on store forwarding (half of create's own samples).
	o := &a.Objects[j]
	*o = Object{}
	o.Kind, o.PID, o.Handle, o.Device, o.TID = kind, e.PID, e.Handle, ev.Device, e.TID
	o.Create, o.Destroy, o.Ender, o.Start, o.End = i, -1, -1, e.Start, e.End
	o.Caller, o.Flags, o.Context, o.Path, o.Frame, o.Scope = e.Caller, e.Flags, ev.Context, ev.Path, ev.Frame, ev.Scope
	tr.live.set(k, j)
	if len(tr.pendingNames) > 0 {
		tr.takeName(k, o)
	}
	if kind == trace.ObjectMapping {
		m := tr.mappings[e.PID]
		if m == nil {
			m = map[uint64]struct{}{}
			tr.mappings[e.PID] = m
		}
		m[e.Handle] = struct{}{}
	}
	if contextBound(kind) && ev.Context != 0 {
		ck := objectKey{e.PID, trace.ObjectContext, ev.Context}
		tr.addMember(&tr.byContext, ck, j, i)
	}
	ev.Object = j
	return j
}

// end ends object j at time at by event ev (index i). Ending a context ends
// the objects created while it was current.
func (tr *Tracker) end(j ObjectID, i int, at int64, reason EndReason, ev *Event) {
	a := tr.a
	o := &a.Objects[j]
	o.End, o.Reason, o.Ender = at, reason, i
	if reason == EndDestroyed {
		o.Destroy = i
	}
	tr.live.del(objectKey{o.PID, o.Kind, o.Handle})
	if o.Kind == trace.ObjectMapping {
		delete(tr.mappings[o.PID], o.Handle)
	}
	tr.endOwned(objectKey{o.PID, o.Kind, o.Handle}, j, i, at, ev)
	if o.Kind == trace.ObjectContext {
		if o.Primary {
			if p, ok := tr.primary[devKey{o.PID, o.Device}]; ok && p == j {
				delete(tr.primary, devKey{o.PID, o.Device})
			}
		}
		ck := objectKey{o.PID, trace.ObjectContext, o.Handle}
		var members []member
		if l, ok := tr.byContext.get(ck); ok {
			members = *l
		}
		for _, m := range members {
			c := m.id
			co := &a.Objects[c]
			if co.Create == m.create && co.Reason == EndAlive && co.Start <= at && c != j {
				co.End, co.Reason, co.Ender = at, EndContext, i
				ck := objectKey{co.PID, co.Kind, co.Handle}
				tr.live.del(ck)
				if co.Kind == trace.ObjectMapping {
					delete(tr.mappings[co.PID], co.Handle)
				}
				ev.Ended = append(ev.Ended, c)
				tr.endOwned(ck, c, i, at, ev)
				tr.ended(c)
			}
		}
		tr.byContext.del(ck)
	}
	tr.ended(j)
}

// endOwned ends the objects owned by the object k (row j) that just ended
// at time at: a library's kernels and modules, their functions, a stream's
// capture (EndOwner), and theirs in turn.
func (tr *Tracker) endOwned(k objectKey, j ObjectID, i int, at int64, ev *Event) {
	if tr.owned.n > 0 { // (inlined: most objects own nothing)
		tr.endOwnedOf(k, j, i, at, ev)
	}
}

func (tr *Tracker) endOwnedOf(k objectKey, j ObjectID, i int, at int64, ev *Event) {
	l, ok := tr.owned.get(k)
	if !ok {
		return
	}
	tr.owned.del(k)
	a := tr.a
	for _, m := range *l {
		c := m.id
		co := &a.Objects[c]
		if co.Create != m.create || co.Reason != EndAlive || c == j {
			continue
		}
		co.End, co.Reason, co.Ender = at, EndOwner, i
		ck := objectKey{co.PID, co.Kind, co.Handle}
		tr.live.del(ck)
		ev.Ended = append(ev.Ended, c)
		tr.endOwned(ck, c, i, at, ev)
		tr.ended(c)
	}
}

// ended hands an object whose life ended to OnObjectEnd; with Forget its
// row is reused once the current event has been handed out.
func (tr *Tracker) ended(j ObjectID) {
	if tr.cfg.onObject != nil {
		tr.cfg.onObject(&tr.a.Objects[j])
	}
	if tr.cfg.forget {
		tr.forgotten = append(tr.forgotten, j)
	}
}

// member is an object created in a context; create tells a reused row from
// the object that was in it.
type member struct {
	id     ObjectID
	create int
}

// addMember adds object j, created by event i, to the list of k in lists
// (the objects created in a context, or owned by an object). A list is
// held by pointer and grows in place, so that adding to one that exists
// is one lookup, not a lookup and a store of the longer slice.
func (tr *Tracker) addMember(lists *objMap[*[]member], k objectKey, j ObjectID, i int) {
	lp, ok := lists.get(k)
	if !ok {
		lp = new([]member)
		lists.set(k, lp)
	}
	l := *lp
	if len(l) == cap(l) && len(l) >= 16 {
		l = tr.pruneMembers(l)
	}
	*lp = append(l, member{j, i})
}

// pruneMembers drops the members that ended, so that a long-lived context
// holds a list of about its live objects, not of all it ever had.
func (tr *Tracker) pruneMembers(l []member) []member {
	out := l[:0]
	for _, m := range l {
		if o := &tr.a.Objects[m.id]; o.Create == m.create && o.Reason == EndAlive {
			out = append(out, m)
		}
	}
	if len(out) > cap(l)/2 {
		return out // the append after doubles it
	}
	return slicesClip(out)
}

// slicesClip returns l with a capacity of twice its length, so that pruning
// does not run again at once.
func slicesClip(l []member) []member {
	out := make([]member, len(l), 2*len(l)+16)
	copy(out, l)
	return out
}

func (tr *Tracker) problem(i int, e *trace.Event, kind trace.Object, reason string) {
	tr.problemAt(i, e, kind, e.Handle, reason)
}

func (tr *Tracker) problemAt(i int, e *trace.Event, kind trace.Object, h uint64, reason string) {
	tr.a.Problems = append(tr.a.Problems, Problem{Event: i, Kind: kind, Handle: h, Reason: reason})
}
