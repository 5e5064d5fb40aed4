package analysis

import "github.com/cuprof/cuprof/trace"

// Stream state of the replay: which synchronizes were idle (Synchronizes).

// SyncState says, for a successful synchronize call, whether it waited for
// anything (Event.Sync; Synchronizes).
type SyncState uint8

const (
	// SyncNone: not a synchronize (or a failed one, or Synchronizes off).
	SyncNone SyncState = iota
	// SyncIdle: no asynchronous work (launches, async copies and memsets,
	// stream-ordered allocations and frees, event records, stream waits:
	// the API table's WorkQueue) was queued in the process since the last
	// synchronize that covered it: for cuCtxSynchronize and default-stream
	// synchronizes, nothing on the device; for cuStreamSynchronize,
	// nothing on that stream, the default stream, or a stream the trace
	// does not name (StreamOf's UnknownStream); for cuEventSynchronize, no
	// record of the event since it was last synchronized. An unknown
	// device on either side covers every device. A destroyed stream's
	// work counts for the synchronizes of its device (a cuCtxSynchronize
	// waits for it), no longer for its handle's; a destroyed event's
	// record is forgotten.
	SyncIdle
	// SyncBusy: a synchronize with such work to wait for.
	SyncBusy
)

func syncState(idle bool) SyncState {
	if idle {
		return SyncIdle
	}
	return SyncBusy
}

// Synchronizes has the replay follow the work queued per process, device
// and stream, so that Event.Sync says which synchronizes were idle. It
// costs a scan of the streams with work pending at each queueing call and
// synchronize, so it is asked for (lint does).
func Synchronizes() Option { return optionFunc(func(c *config) { c.syncs = true }) }

type pendingKey struct {
	dev    int32
	stream uint64
}

// pendingSet is the (device, stream) pairs of one process with work issued
// since the last synchronize that covered them. A process has a few such
// streams: they are scanned, and only a set outgrowing pendingScanMax keeps
// an index too (a trace of thousands of streams with work must not make each
// launch a scan of them all).
type pendingSet struct {
	keys  []pendingKey
	index map[pendingKey]int // positions in keys; nil while keys is short
}

const pendingScanMax = 32

// add puts k in the set.
func (ps *pendingSet) add(k pendingKey) {
	if ps.index != nil {
		if _, ok := ps.index[k]; !ok {
			ps.index[k] = len(ps.keys)
			ps.keys = append(ps.keys, k)
		}
		return
	}
	for i := len(ps.keys) - 1; i >= 0; i-- { // the newest first: a loop issues on one stream
		if ps.keys[i] == k {
			return
		}
	}
	ps.keys = append(ps.keys, k)
	if len(ps.keys) > pendingScanMax {
		ps.index = make(map[pendingKey]int, len(ps.keys))
		for i, k := range ps.keys {
			ps.index[k] = i
		}
	}
}

// compacted ends a removal: keys[:n] are the pairs kept.
func (ps *pendingSet) compacted(n int) {
	if n == len(ps.keys) {
		return
	}
	ps.keys = ps.keys[:n]
	if ps.index == nil {
		return
	}
	if n <= pendingScanMax/2 {
		ps.index = nil
		return
	}
	clear(ps.index)
	for i, k := range ps.keys {
		ps.index[k] = i
	}
}

// syncTracker decides which synchronizes were idle: it keeps the
// asynchronous work issued per process, device and stream since the last
// synchronize that covered it (per stream and event: what the trace names).
type syncTracker struct {
	pending  map[uint32]*pendingSet
	recorded map[[2]uint64]bool // (pid, event) recorded since its last synchronize
}

func newSyncTracker() syncTracker {
	return syncTracker{pending: map[uint32]*pendingSet{}, recorded: map[[2]uint64]bool{}}
}

// set returns pid's pending work.
func (st *syncTracker) set(pid uint32) *pendingSet {
	p := st.pending[pid]
	if p == nil {
		p = &pendingSet{}
		st.pending[pid] = p
	}
	return p
}

// step follows successful call e on device dev; for a synchronize it
// says whether it was idle.
func (st *syncTracker) step(e *trace.Event, dev int32) SyncState {
	info := e.API.Info()
	if info.Work == trace.WorkQueue { // work a later synchronize waits for (the API table's work column)
		st.set(e.PID).add(pendingKey{dev, StreamOf(e)})
		if e.API == trace.APIEventRecord || e.API == trace.APIEventRecordWithFlags {
			st.recorded[[2]uint64{uint64(e.PID), e.Handle}] = true
		}
		return SyncNone
	}
	if info.Role == trace.RoleDestroy {
		st.destroyed(e, &info)
	}
	if info.Category != trace.CategorySync {
		return SyncNone
	}
	idle := true
	if e.API == trace.APIEventSynchronize {
		k := [2]uint64{uint64(e.PID), e.Handle}
		idle = !st.recorded[k]
		delete(st.recorded, k)
		return syncState(idle)
	}
	p := st.set(e.PID)
	kept := 0
	if stream := StreamOf(e); e.API == trace.APIStreamSynchronize && stream != 0 {
		for _, k := range p.keys {
			if Covers(dev, k.dev) && (k.stream == stream || k.stream == 0 || k.stream == UnknownStream) {
				idle = false
			}
			if k.stream != stream { // its own stream's work, on any device, is done
				p.keys[kept] = k
				kept++
			}
		}
	} else { // cuCtxSynchronize, default-stream synchronize
		for _, k := range p.keys {
			cov := Covers(dev, k.dev)
			if cov {
				idle = false
			}
			if !cov || (e.API != trace.APICtxSynchronize && k.stream != 0 && k.stream != UnknownStream) {
				p.keys[kept] = k
				kept++
			}
		}
	}
	p.compacted(kept)
	return syncState(idle)
}

// destroyedStream stands, in a pending set, for the work of every stream
// destroyed with work pending on one device: a cuCtxSynchronize still waits
// for it, no stream's own synchronize does, and a trace that makes streams
// forever keeps one pair per device, not one per stream made.
const destroyedStream = UnknownStream - 1

// destroyed forgets what the tracker keeps of an object destroyed: a
// stream's pending work is folded into its device's destroyedStream pair,
// an event's record is dropped (a new event of the handle is not recorded).
func (st *syncTracker) destroyed(e *trace.Event, info *trace.APIInfo) {
	switch info.Object {
	case trace.ObjectEvent:
		delete(st.recorded, [2]uint64{uint64(e.PID), e.Handle})
	case trace.ObjectStream:
		p := st.pending[e.PID]
		if p == nil || e.Handle == 0 {
			return
		}
		kept, nfold := 0, 0
		var fold [4]int32 // the devices of its pending work (one, mostly)
		for _, k := range p.keys {
			if k.stream != e.Handle {
				p.keys[kept] = k
				kept++
			} else if nfold < len(fold) {
				fold[nfold] = k.dev
				nfold++
			} else {
				fold[0] = trace.NoDevice // work on many devices: covered by any synchronize
			}
		}
		p.compacted(kept)
		for _, d := range fold[:nfold] {
			p.add(pendingKey{d, destroyedStream})
		}
	}
}

// Covers reports whether a call on device call reaches work or memory on
// device dev (an unknown device on either side covers everything).
func Covers(call, dev int32) bool {
	return call == trace.NoDevice || dev == trace.NoDevice || dev == call
}
