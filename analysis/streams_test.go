package analysis

import (
	"math/rand/v2"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// mapSyncTracker is the idle rule of syncTracker written plainly, with a map
// of counts per process: what the scanned sets must answer.
// A destroyed stream's work stays pending, under a generation of its
// handle that no later stream of the handle has (gens: the generation of
// each handle now): forgotten only by a synchronize that covers it.
type mapSyncTracker struct {
	pending  map[uint32]map[pendingKey]int
	recorded map[[2]uint64]bool
	gens     map[[2]uint64]uint64 // by process and handle
}

// gen is the stream key of stream s of process pid now: s in its current
// generation.
func (st *mapSyncTracker) gen(pid uint32, s uint64) uint64 {
	if s == 0 || s == UnknownStream {
		return s
	}
	return s | st.gens[[2]uint64{uint64(pid), s}]<<40
}

func (st *mapSyncTracker) idle(e *trace.Event, dev int32) (idle, isSync bool) {
	p := st.pending[e.PID]
	if p == nil {
		p = map[pendingKey]int{}
		st.pending[e.PID] = p
	}
	if e.API.Info().Work == trace.WorkQueue {
		p[pendingKey{dev, st.gen(e.PID, StreamOf(e))}]++
		if e.API == trace.APIEventRecord {
			st.recorded[[2]uint64{uint64(e.PID), e.Handle}] = true
		}
		return false, false
	}
	switch e.API {
	case trace.APIStreamDestroy:
		if e.Handle != 0 {
			st.gens[[2]uint64{uint64(e.PID), e.Handle}]++
		}
	case trace.APIEventDestroy:
		delete(st.recorded, [2]uint64{uint64(e.PID), e.Handle})
	}
	if e.API.Info().Category != trace.CategorySync {
		return false, false
	}
	idle = true
	switch {
	case e.API == trace.APIEventSynchronize:
		k := [2]uint64{uint64(e.PID), e.Handle}
		idle = !st.recorded[k]
		delete(st.recorded, k)
	case e.API == trace.APIStreamSynchronize && StreamOf(e) != 0:
		s := st.gen(e.PID, StreamOf(e))
		for k, n := range p {
			if n > 0 && Covers(dev, k.dev) && (k.stream == s || k.stream == 0 || k.stream == UnknownStream) {
				idle = false
			}
		}
		for k := range p {
			if k.stream == s {
				delete(p, k)
			}
		}
	default:
		for k, n := range p {
			if n > 0 && Covers(dev, k.dev) {
				idle = false
			}
		}
		for k := range p {
			if Covers(dev, k.dev) && (e.API == trace.APICtxSynchronize || k.stream == 0 || k.stream == UnknownStream) {
				delete(p, k)
			}
		}
	}
	return idle, true
}

// TestSyncTrackerMatchesMap drives syncTracker and mapSyncTracker with the
// same random calls, on few streams (scanned) and on many (indexed, past
// pendingScanMax, and back under it): every synchronize is idle or not alike.
func TestSyncTrackerMatchesMap(t *testing.T) {
	apis := []trace.API{trace.APILaunchKernel, trace.APILaunchKernelEx, trace.APIMemsetD8Async, trace.APIEventRecord,
		trace.APIStreamSynchronize, trace.APICtxSynchronize, trace.APIEventSynchronize, trace.APICtxGetCurrent,
		trace.APIStreamDestroy, trace.APIEventDestroy}
	for _, streams := range []int{3, 12, 200} {
		rng := rand.New(rand.NewPCG(uint64(streams), 5))
		st := newSyncTracker()
		ref := &mapSyncTracker{pending: map[uint32]map[pendingKey]int{}, recorded: map[[2]uint64]bool{}, gens: map[[2]uint64]uint64{}}
		syncs, idles, indexed := 0, 0, false
		for i := range 200_000 {
			e := &trace.Event{Kind: trace.KindCall, PID: uint32(1 + rng.IntN(2)), API: apis[rng.IntN(len(apis))],
				Stream: uint64(rng.IntN(streams + 3)), Handle: uint64(rng.IntN(4))}
			if e.API == trace.APIStreamDestroy {
				e.Handle, e.Stream = uint64(rng.IntN(streams+3)), 0
			}
			if e.API == trace.APILaunchKernelEx || (e.API != trace.APIStreamSynchronize && rng.IntN(4) == 0) {
				e.Stream = 0
			}
			dev := int32(rng.IntN(3)) - 1 // NoDevice, 0 or 1
			got := st.step(e, dev)
			want, isSync := ref.idle(e, dev)
			if (got != SyncNone) != isSync || (got != SyncNone && (got == SyncIdle) != want) {
				t.Fatalf("%d streams, call %d (%s, stream %d, device %d): sync %v idle %v, want sync %v idle %v",
					streams, i, e.API.Info().Name, e.Stream, dev, got != SyncNone, got == SyncIdle, isSync, want)
			}
			if got != SyncNone {
				syncs++
				if got == SyncIdle {
					idles++
				}
			}
			for _, p := range st.pending {
				indexed = indexed || p.index != nil
			}
		}
		if syncs == 0 || idles == 0 || idles == syncs {
			t.Errorf("%d streams: %d synchronizes, %d idle: the mix tests nothing", streams, syncs, idles)
		}
		if want := streams > pendingScanMax; indexed != want {
			t.Errorf("%d streams: a set was indexed %v, want %v", streams, indexed, want)
		}
	}
}

// TestSyncTrackerForgetsDestroyedObjects: streams made, given work and
// destroyed 100,000 times, and events recorded and destroyed, leave one
// pending pair (their device's destroyed-stream work, which the closing
// cuCtxSynchronize still waits for) and no recorded event, not one per
// object made.
func TestSyncTrackerForgetsDestroyedObjects(t *testing.T) {
	st := newSyncTracker()
	step := func(api trace.API, handle, stream uint64) SyncState {
		return st.step(&trace.Event{Kind: trace.KindCall, PID: 1, API: api, Handle: handle, Stream: stream}, 0)
	}
	for n := range uint64(100_000) {
		s, ev := 0x100000+2*n, 0x100001+2*n
		step(trace.APIEventRecord, ev, s)
		step(trace.APIStreamWaitEvent, s, s)
		step(trace.APIEventDestroy, ev, 0)
		step(trace.APIStreamDestroy, s, 0)
	}
	if p := st.pending[1]; p == nil || len(p.keys) != 1 || len(st.recorded) != 0 {
		t.Fatalf("pending %+v, %d events recorded: kept per object made", p, len(st.recorded))
	}
	if s := step(trace.APICtxSynchronize, 0, 0); s != SyncBusy {
		t.Errorf("cuCtxSynchronize after the destroyed streams' work: %v, want not idle", s)
	}
	if len(st.pending[1].keys) != 0 {
		t.Errorf("pending after cuCtxSynchronize: %+v", st.pending[1].keys)
	}
}
