package analysis

import (
	"math/rand/v2"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// mapSyncTracker is the idle rule of syncTracker written plainly, with a map
// of counts per process: what the scanned sets must answer.
type mapSyncTracker struct {
	pending  map[uint32]map[pendingKey]int
	recorded map[[2]uint64]bool
}

func (st *mapSyncTracker) idle(e *trace.Event, dev int32) (idle, isSync bool) {
	p := st.pending[e.PID]
	if p == nil {
		p = map[pendingKey]int{}
		st.pending[e.PID] = p
	}
	if e.API.Info().Work == trace.WorkQueue {
		p[pendingKey{dev, StreamOf(e)}]++
		if e.API == trace.APIEventRecord {
			st.recorded[[2]uint64{uint64(e.PID), e.Handle}] = true
		}
		return false, false
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
		s := StreamOf(e)
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
		trace.APIStreamSynchronize, trace.APICtxSynchronize, trace.APIEventSynchronize, trace.APICtxGetCurrent}
	for _, streams := range []int{3, 12, 200} {
		rng := rand.New(rand.NewPCG(uint64(streams), 5))
		st := newSyncTracker()
		ref := &mapSyncTracker{pending: map[uint32]map[pendingKey]int{}, recorded: map[[2]uint64]bool{}}
		syncs, idles, indexed := 0, 0, false
		for i := range 200_000 {
			e := &trace.Event{Kind: trace.KindCall, PID: uint32(1 + rng.IntN(2)), API: apis[rng.IntN(len(apis))],
				Stream: uint64(rng.IntN(streams + 3)), Handle: uint64(rng.IntN(4))}
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
