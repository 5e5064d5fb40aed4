package analysis

import (
	"slices"

	"github.com/cuprof/cuprof/trace"
)

// seeDevice records that a successful call named device dev of process pid.
func (tr *Tracker) seeDevice(pid uint32, dev int32) {
	k := devKey{pid, dev}
	if k == tr.lastDev {
		return
	}
	tr.devices[k] = true
	tr.lastDev = k
}

// knownDevice reports whether device dev of process pid exists: a
// successful call of the process recorded it, or the recording's GPU list
// names it.
func (tr *Tracker) knownDevice(pid uint32, dev int32) bool {
	return tr.devices[devKey{pid, dev}] || slices.Contains(tr.gpus, dev)
}

// devOf returns the device bound to an object (none to handle 0: bind
// binds no handle 0). Small enough to be inlined.
func (tr *Tracker) devOf(pid uint32, kind trace.Object, h uint64) (int32, bool) {
	if d, ok := tr.objDev.get(objectKey{pid, kind, h}); ok || tr.dead.n == 0 {
		return d, ok
	}
	return tr.deadDev(objectKey{pid, kind, h})
}

// deadDev is devOf for a destroyed object: its binding while it is among
// the last keptDestroyed destroyed.
func (tr *Tracker) deadDev(k objectKey) (int32, bool) {
	b, ok := tr.dead.get(k)
	return b.dev, ok
}

// keptDestroyed is how many destroyed objects keep their device binding:
// a destroyed handle's misuse (a use after free, a second destroy) mostly
// comes soon after, and a trace that makes and destroys objects forever
// keeps this many bindings, not one per object it made.
const keptDestroyed = 4096

// deadBinding is a destroyed object's device and the number of its death
// (the ring's entry that forgets it).
type deadBinding struct {
	dev int32
	seq uint32
}

// deadKey is an entry of the ring of deaths.
type deadKey struct {
	k   objectKey
	seq uint32
}

// unbind moves the binding of the object a successful destroy names among
// the destroyed, forgetting the oldest of them past keptDestroyed (unless
// it died again since: then its later death forgets it).
func (tr *Tracker) unbind(e *trace.Event) {
	info := factsOf(e.API)
	tr.unbindKey(objectKey{e.PID, info.Object, e.Handle})
	if info.Object == trace.ObjectAllocation {
		tr.unbindKey(objectKey{e.PID, trace.ObjectManagedAllocation, e.Handle})
	}
}

func (tr *Tracker) unbindKey(k objectKey) {
	d, ok := tr.objDev.get(k)
	if !ok {
		return
	}
	tr.objDev.del(k)
	tr.nDeaths++
	tr.dead.set(k, deadBinding{d, tr.nDeaths})
	if len(tr.deaths) < keptDestroyed {
		tr.deaths = append(tr.deaths, deadKey{k, tr.nDeaths})
		return
	}
	old := tr.deaths[tr.deathAt]
	if b, ok := tr.dead.get(old.k); ok && b.seq == old.seq {
		tr.dead.del(old.k)
	}
	tr.deaths[tr.deathAt] = deadKey{k, tr.nDeaths}
	tr.deathAt = (tr.deathAt + 1) % keptDestroyed
}

// attribute finds the device of a call recorded without one: the device of
// the object it names (Handle, then Aux, then Stream), else the device of
// the thread's current context ctx (contextDevice). (One function, not a
// lookup of the objects and the fallback: a call less per call.)
func (tr *Tracker) attribute(e *trace.Event, ctx uint64) int32 {
	info := factsOf(e.API)
	switch e.API {
	case trace.APIDevicePrimaryCtxRetain, trace.APICtxCreate:
		return tr.contextDevice(e.PID, ctx) // Handle is an output
	case trace.APICtxGetCurrent, trace.APICtxGetDevice:
		// the context asked about (or returned); 0 is the current one
		if d, ok := tr.devOf(e.PID, trace.ObjectContext, e.Handle); ok {
			return d
		}
		return tr.contextDevice(e.PID, ctx)
	}
	if info.Role != trace.RoleCreate && info.Object != trace.ObjectNone && info.Object != trace.ObjectDevice {
		if d, ok := tr.devOf(e.PID, info.Object, e.Handle); ok {
			return d
		}
		if info.Object == trace.ObjectAllocation {
			if d, ok := tr.devOf(e.PID, trace.ObjectManagedAllocation, e.Handle); ok {
				return d
			}
		}
	}
	if info.Object == trace.ObjectNone && info.Category == trace.CategoryMemcpy {
		// copies name device pointers in Handle (destination) and Aux (source)
		if d, ok := tr.devOf(e.PID, trace.ObjectAllocation, e.Handle); ok {
			return d
		}
		if d, ok := tr.devOf(e.PID, trace.ObjectAllocation, e.Aux); ok {
			return d
		}
	}
	if info.AuxObject != trace.ObjectNone {
		// the second object: the physical memory a mapping maps, the
		// library a kernel comes from
		if d, ok := tr.devOf(e.PID, info.AuxObject, e.Aux); ok {
			return d
		}
	}
	switch e.API {
	case trace.APIMemAllocFromPoolAsync:
		if d, ok := tr.devOf(e.PID, trace.ObjectPool, e.Aux); ok {
			return d
		}
	case trace.APIStreamWaitEvent:
		if d, ok := tr.devOf(e.PID, trace.ObjectEvent, e.Aux); ok {
			return d
		}
	}
	if !IsDefaultStream(e.Stream) {
		if d, ok := tr.devOf(e.PID, trace.ObjectStream, e.Stream); ok {
			return d
		}
	}
	return tr.contextDevice(e.PID, ctx)
}

// contextDevice returns the device bound to context ctx of process pid,
// NoDevice when none is (or ctx is 0).
func (tr *Tracker) contextDevice(pid uint32, ctx uint64) int32 {
	if ctx != 0 {
		if d, ok := tr.devOf(pid, trace.ObjectContext, ctx); ok {
			return d
		}
	}
	return trace.NoDevice
}

// bind records the device of what a successful call creates or returns. A
// destroyed handle keeps its binding while it is among the last
// keptDestroyed objects destroyed (unbind): its later misuse still belongs
// to the device it was on, and reuse rebinds it.
func (tr *Tracker) bind(e *trace.Event, dev int32, ctx uint64) {
	if !e.Result.OK() {
		return
	}
	info := factsOf(e.API)
	switch {
	case e.API == trace.APIDevicePrimaryCtxRetain || e.API == trace.APICtxCreate:
		if e.Handle != 0 && dev != trace.NoDevice {
			tr.objDev.set(objectKey{e.PID, trace.ObjectContext, e.Handle}, dev)
		}
	case info.Role == trace.RoleCreate || (info.Role == trace.RoleGet && (info.Object == trace.ObjectPool || madeByGet(info))):
		if e.Handle != 0 && dev != trace.NoDevice && info.Object != trace.ObjectNone {
			tr.objDev.set(objectKey{e.PID, info.Object, e.Handle}, dev)
		}
	case e.API == trace.APICtxGetDevice && dev != trace.NoDevice:
		// the driver told which device the (current) context is on
		c := e.Handle
		if c == 0 {
			c = ctx
		}
		k := objectKey{e.PID, trace.ObjectContext, c}
		if _, known := tr.objDev.get(k); c != 0 && !known {
			tr.objDev.set(k, dev)
		}
	}
}

// currentContext returns the thread's current context, 0 when none.
func currentContext(th *threadState) uint64 {
	if n := len(th.contexts); n > 0 {
		return th.contexts[n-1]
	}
	return 0
}

// stepContexts applies a successful call's effect on its thread's context
// stack: cuCtxCreate and cuCtxPushCurrent push, cuCtxPopCurrent pops,
// cuCtxSetCurrent replaces the top (a 0 handle pops it), cuCtxDestroy pops
// the context when it is on top, and a cuCtxGetCurrent that returns a
// context seeds an empty stack.
func stepContexts(th *threadState, e *trace.Event) {
	if !e.Result.OK() {
		return
	}
	s := th.contexts
	switch e.API {
	case trace.APICtxCreate, trace.APICtxPushCurrent:
		if e.Handle != 0 {
			s = append(s, e.Handle)
		}
	case trace.APICtxPopCurrent:
		if len(s) > 0 {
			s = s[:len(s)-1]
		}
	case trace.APICtxSetCurrent:
		switch {
		case e.Handle == 0 && len(s) > 0:
			s = s[:len(s)-1]
		case e.Handle == 0:
		case len(s) == 0:
			s = append(s, e.Handle)
		default:
			s[len(s)-1] = e.Handle
		}
	case trace.APICtxGetCurrent:
		if len(s) == 0 && e.Handle != 0 {
			s = append(s, e.Handle)
		}
		th.contexts = s
		return // asking changes nothing (ContextGen)
	case trace.APICtxDestroy:
		if len(s) > 0 && s[len(s)-1] == e.Handle {
			s = s[:len(s)-1]
		}
	case trace.APIDevicePrimaryCtxRelease, trace.APIDevicePrimaryCtxReset:
		// the stack stays, the context on it may end
	default:
		return
	}
	th.contexts = s
	th.ctxGen++
}
