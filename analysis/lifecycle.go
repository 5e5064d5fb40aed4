package analysis

import "github.com/cuprof/cuprof/trace"

// objects applies a call to the object lifecycles. Objects are keyed by
// (process, object kind, handle); a handle may be reused once its object
// ended. Failed calls create and destroy nothing.
func (tr *Tracker) objects(i int, e *trace.Event, ev *Event, th *threadState) {
	if !e.Result.OK() {
		return
	}
	a := tr.a
	info := e.API.Info()
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
		if j, ok := tr.live[objectKey{e.PID, trace.ObjectContext, e.Handle}]; ok && a.Objects[j].Primary {
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
			case info.Object == trace.ObjectStream:
				o.Stream = e.Handle
			}
		case trace.RoleDestroy:
			if e.Handle == 0 {
				break // cuMemFree(0) and friends do nothing
			}
			j, ok := tr.live[objectKey{e.PID, info.Object, e.Handle}]
			if !ok && info.Object == trace.ObjectAllocation {
				// cuMemFree frees managed memory too
				j, ok = tr.live[objectKey{e.PID, trace.ObjectManagedAllocation, e.Handle}]
			}
			if !ok {
				tr.problem(i, e, info.Object, "destroy of an object not created in the trace")
				break
			}
			ev.Object = j
			tr.end(j, i, e.End, EndDestroyed, ev)
		case trace.RoleUse, trace.RoleGet:
			tr.use(e.PID, info.Object, e.Handle, ev)
		}
		// stream-ordered calls use their stream too
		if e.Stream > 2 && !(info.Object == trace.ObjectStream && e.Handle == e.Stream) {
			if j, ok := tr.live[objectKey{e.PID, trace.ObjectStream, e.Stream}]; ok {
				a.Objects[j].Uses++
			}
		}
	}
}

// use counts a use of the live object (kind, h) and makes it the event's.
func (tr *Tracker) use(pid uint32, kind trace.Object, h uint64, ev *Event) {
	if h == 0 || kind == trace.ObjectNone {
		return
	}
	if j, ok := tr.live[objectKey{pid, kind, h}]; ok {
		tr.a.Objects[j].Uses++
		ev.Object = j
	}
}

func (tr *Tracker) create(i int, e *trace.Event, ev *Event, kind trace.Object) ObjectID {
	a := tr.a
	k := objectKey{e.PID, kind, e.Handle}
	if j, ok := tr.live[k]; ok {
		tr.end(j, i, e.Start, EndReplaced, ev)
		ev.Ended = append(ev.Ended, j)
	}
	o := Object{Kind: kind, PID: e.PID, Handle: e.Handle, Device: ev.Device,
		Create: i, Destroy: -1, Ender: -1, Start: e.Start, End: e.End, TID: e.TID, Caller: e.Caller,
		Flags: e.Flags, Context: ev.Context, Path: ev.Path, Frame: ev.Frame, Scope: ev.Scope}
	var j ObjectID
	if n := len(tr.freeObjects); n > 0 {
		j = tr.freeObjects[n-1]
		tr.freeObjects = tr.freeObjects[:n-1]
		a.Objects[j] = o
	} else {
		a.Objects = append(a.Objects, o)
		j = ObjectID(len(a.Objects) - 1)
	}
	tr.live[k] = j
	if kind != trace.ObjectContext && ev.Context != 0 {
		ck := objectKey{e.PID, trace.ObjectContext, ev.Context}
		l := tr.byContext[ck]
		if len(l) == cap(l) && len(l) >= 16 {
			l = tr.pruneMembers(l)
		}
		tr.byContext[ck] = append(l, member{j, i})
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
	delete(tr.live, objectKey{o.PID, o.Kind, o.Handle})
	if o.Kind == trace.ObjectContext {
		if o.Primary {
			if p, ok := tr.primary[devKey{o.PID, o.Device}]; ok && p == j {
				delete(tr.primary, devKey{o.PID, o.Device})
			}
		}
		ck := objectKey{o.PID, trace.ObjectContext, o.Handle}
		for _, m := range tr.byContext[ck] {
			c := m.id
			co := &a.Objects[c]
			if co.Create == m.create && co.Reason == EndAlive && co.Start <= at && c != j {
				co.End, co.Reason, co.Ender = at, EndContext, i
				delete(tr.live, objectKey{co.PID, co.Kind, co.Handle})
				ev.Ended = append(ev.Ended, c)
				tr.ended(c)
			}
		}
		delete(tr.byContext, ck)
	}
	tr.ended(j)
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
	tr.a.Problems = append(tr.a.Problems, Problem{Event: i, Kind: kind, Handle: e.Handle, Reason: reason})
}
