package lifecycle

import "github.com/cuprof/cuprof/trace"

// AttributeDevices fills in the Device of every call event whose device is
// unknown (trace.NoDevice), in place. It never changes a device that the
// capture recorded.
//
// The attribution replays what the driver does per thread, in trace order:
//
//   - cuDevicePrimaryCtxRetain and cuCtxCreate bind the context they return
//     (Handle) to the device of their dev argument (Event.Device).
//   - Each thread has a context stack: cuCtxCreate and cuCtxPushCurrent push,
//     cuCtxPopCurrent pops, cuCtxSetCurrent replaces the top (a 0 handle
//     empties it), cuCtxDestroy pops the context when it is on top, and a
//     cuCtxGetCurrent that returns a context seeds an empty stack.
//   - cuCtxGetDevice, which records the device it returns, binds the
//     context it asked about when nothing else did.
//   - An object inherits the device of the call that created it (streams,
//     events, allocations, pools, modules), and cuDeviceGetDefaultMemPool /
//     cuDeviceGetMemPool bind the pool they return to their dev argument.
//   - A call with an unknown device then takes, in order: the device of the
//     object it names (Handle, then Aux, then Stream, since those name existing
//     objects), and otherwise the device of its thread's current context.
//     Default-stream handles (0, 1, 2) name no object.
//
// Calls that failed still get a device (they were made on one) but create or
// bind nothing. Non-call events are left alone.
func AttributeDevices(t *trace.Trace) {
	ctxs := newContextTracker()
	objDev := map[objectKey]int32{}
	devOf := func(pid uint32, kind trace.Object, h uint64) (int32, bool) {
		if h == 0 {
			return trace.NoDevice, false
		}
		d, ok := objDev[objectKey{pid, kind, h}]
		return d, ok
	}
	for i := range t.Events {
		e := &t.Events[i]
		if e.Kind != trace.KindCall {
			continue
		}
		info := e.API.Info()
		if e.Device == trace.NoDevice {
			if d, ok := lookupDevice(e, info, devOf); ok {
				e.Device = d
			} else if c := ctxs.current(e.PID, e.TID); c != 0 {
				if d, ok := devOf(e.PID, trace.ObjectContext, c); ok {
					e.Device = d
				}
			}
		}
		if !e.Result.OK() {
			continue
		}
		// bind what the call creates or returns
		switch {
		case e.API == trace.APIDevicePrimaryCtxRetain || e.API == trace.APICtxCreate:
			if e.Handle != 0 && e.Device != trace.NoDevice {
				objDev[objectKey{e.PID, trace.ObjectContext, e.Handle}] = e.Device
			}
		case info.Role == trace.RoleCreate || (info.Object == trace.ObjectPool && info.Role == trace.RoleGet):
			if e.Handle != 0 && e.Device != trace.NoDevice && info.Object != trace.ObjectNone {
				objDev[objectKey{e.PID, info.Object, e.Handle}] = e.Device
			}
		case e.API == trace.APICtxGetDevice && e.Device != trace.NoDevice:
			// the driver told which device the (current) context is on
			c := e.Handle
			if c == 0 {
				c = ctxs.current(e.PID, e.TID)
			}
			k := objectKey{e.PID, trace.ObjectContext, c}
			if _, known := objDev[k]; c != 0 && !known {
				objDev[k] = e.Device
			}
		}
		// A destroyed handle keeps its binding: its later misuse still
		// belongs to the device it was on, and reuse rebinds it.
		ctxs.step(e)
	}
}

// lookupDevice finds the device of the objects a call names.
func lookupDevice(e *trace.Event, info trace.APIInfo, devOf func(uint32, trace.Object, uint64) (int32, bool)) (int32, bool) {
	switch e.API {
	case trace.APIDevicePrimaryCtxRetain, trace.APICtxCreate, trace.APICtxGetCurrent, trace.APICtxGetDevice:
		// Handle is an output (or the current context, handled by the caller).
		if e.API == trace.APICtxGetDevice && e.Handle != 0 {
			return devOf(e.PID, trace.ObjectContext, e.Handle)
		}
		if e.API == trace.APICtxGetCurrent {
			return devOf(e.PID, trace.ObjectContext, e.Handle)
		}
		return trace.NoDevice, false
	}
	if info.Role != trace.RoleCreate && info.Object != trace.ObjectNone && info.Object != trace.ObjectDevice {
		if d, ok := devOf(e.PID, info.Object, e.Handle); ok {
			return d, true
		}
		if info.Object == trace.ObjectAllocation {
			if d, ok := devOf(e.PID, trace.ObjectManagedAllocation, e.Handle); ok {
				return d, true
			}
		}
	}
	if info.Object == trace.ObjectNone && info.Category == trace.CategoryMemcpy {
		// copies name device pointers in Handle (destination) and Aux (source)
		for _, h := range []uint64{e.Handle, e.Aux} {
			if d, ok := devOf(e.PID, trace.ObjectAllocation, h); ok {
				return d, true
			}
		}
	}
	switch e.API {
	case trace.APIMemAllocFromPoolAsync:
		if d, ok := devOf(e.PID, trace.ObjectPool, e.Aux); ok {
			return d, true
		}
	case trace.APIStreamWaitEvent:
		if d, ok := devOf(e.PID, trace.ObjectEvent, e.Aux); ok {
			return d, true
		}
	}
	if !isDefaultStream(e.Stream) {
		if d, ok := devOf(e.PID, trace.ObjectStream, e.Stream); ok {
			return d, true
		}
	}
	return trace.NoDevice, false
}

// isDefaultStream reports whether h is one of the default-stream handles
// (0, CU_STREAM_LEGACY = 1, CU_STREAM_PER_THREAD = 2), which name no object.
func isDefaultStream(h uint64) bool { return h <= 2 }

type threadKey struct{ pid, tid uint32 }

// contextTracker replays the per-thread context stacks.
type contextTracker struct {
	stacks map[threadKey][]uint64
}

func newContextTracker() *contextTracker {
	return &contextTracker{stacks: map[threadKey][]uint64{}}
}

// current returns the thread's current context, 0 when none.
func (c *contextTracker) current(pid, tid uint32) uint64 {
	s := c.stacks[threadKey{pid, tid}]
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// step applies a successful call's effect on its thread's context stack.
func (c *contextTracker) step(e *trace.Event) {
	if !e.Result.OK() {
		return
	}
	k := threadKey{e.PID, e.TID}
	s := c.stacks[k]
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
	case trace.APICtxDestroy:
		if len(s) > 0 && s[len(s)-1] == e.Handle {
			s = s[:len(s)-1]
		}
	default:
		return
	}
	c.stacks[k] = s
}
