package analysis

import (
	"math/rand/v2"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// attributeBefore is attribute as it was written before it was made one
// function (lookupDevice, then the context's device), kept to check the
// new one against.
func (tr *Tracker) attributeBefore(e *trace.Event, ctx uint64) int32 {
	devOf := func(pid uint32, kind trace.Object, h uint64) (int32, bool) {
		if h == 0 {
			return trace.NoDevice, false
		}
		return tr.objDev.get(objectKey{pid, kind, h})
	}
	lookup := func() (int32, bool) {
		info := factsOf(e.API)
		switch e.API {
		case trace.APIDevicePrimaryCtxRetain, trace.APICtxCreate:
			return trace.NoDevice, false
		case trace.APICtxGetCurrent, trace.APICtxGetDevice:
			return devOf(e.PID, trace.ObjectContext, e.Handle)
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
			if d, ok := devOf(e.PID, trace.ObjectAllocation, e.Handle); ok {
				return d, true
			}
			if d, ok := devOf(e.PID, trace.ObjectAllocation, e.Aux); ok {
				return d, true
			}
		}
		if info.AuxObject != trace.ObjectNone {
			if d, ok := devOf(e.PID, info.AuxObject, e.Aux); ok {
				return d, true
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
		if !IsDefaultStream(e.Stream) {
			if d, ok := devOf(e.PID, trace.ObjectStream, e.Stream); ok {
				return d, true
			}
		}
		return trace.NoDevice, false
	}
	if d, ok := lookup(); ok {
		return d
	}
	if ctx != 0 {
		if d, ok := devOf(e.PID, trace.ObjectContext, ctx); ok {
			return d
		}
	}
	return trace.NoDevice
}

// TestAttributeMatchesBefore binds random objects of every kind (a few
// handles, 0 to 3, two processes) to devices and asks both attributes for
// calls of every API naming random handles, auxes, streams and contexts:
// they answer the same.
func TestAttributeMatchesBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	apis := append(trace.APIs(), trace.API(1<<15))
	kinds := trace.Objects()
	for round := range 200 {
		tr := NewTracker(&trace.Trace{})
		for range r.IntN(40) {
			k := objectKey{uint32(1 + r.IntN(2)), kinds[r.IntN(len(kinds))], uint64(1 + r.IntN(3))}
			tr.objDev.set(k, int32(r.IntN(4)))
		}
		for range 500 {
			e := &trace.Event{Kind: trace.KindCall, API: apis[r.IntN(len(apis))], PID: uint32(1 + r.IntN(2)),
				Handle: uint64(r.IntN(4)), Aux: uint64(r.IntN(4)), Stream: uint64(r.IntN(4)), Device: trace.NoDevice}
			ctx := uint64(r.IntN(4))
			if got, want := tr.attribute(e, ctx), tr.attributeBefore(e, ctx); got != want {
				t.Fatalf("round %d: %s handle %d aux %d stream %d ctx %d in process %d: attribute %d, before %d",
					round, e.API.Info().Name, e.Handle, e.Aux, e.Stream, ctx, e.PID, got, want)
			}
		}
	}
}

// TestFactsSayWhatBindAndContextsDo: for an API whose facts say bind binds
// nothing or stepContexts leaves the stack alone (so that Step does not
// call them), they do nothing for any successful call of it (handles 0 to
// 3, devices known or not, stacks empty or not).
func TestFactsSayWhatBindAndContextsDo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, a := range append(trace.APIs(), trace.API(1<<15)) {
		f := factsOf(a)
		for range 50 {
			e := &trace.Event{Kind: trace.KindCall, API: a, PID: 1, Handle: uint64(r.IntN(4)), Aux: uint64(r.IntN(4)),
				Stream: uint64(r.IntN(4))}
			if !f.binds {
				tr := NewTracker(&trace.Trace{})
				tr.bind(e, int32(r.IntN(3))-1, uint64(r.IntN(3)))
				if tr.objDev.n != 0 {
					t.Fatalf("%s: facts say bind binds nothing; it bound %d", a.Info().Name, tr.objDev.n)
				}
			}
			if !f.contexts {
				th := &threadState{contexts: append([]uint64(nil), []uint64{1, 2}[:r.IntN(3)]...)}
				before := len(th.contexts)
				stepContexts(th, e)
				if len(th.contexts) != before || (before > 0 && th.contexts[before-1] != uint64(before)) {
					t.Fatalf("%s: facts say stepContexts does nothing; the stack is %v", a.Info().Name, th.contexts)
				}
			}
		}
	}
}
