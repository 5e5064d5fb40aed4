package lifecycle

import (
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// MemoryKey names one bytes-in-use counter: the allocations of one kind
// (device, host or managed) of one process, device and pool.
type MemoryKey struct {
	PID         uint32
	Device      int32
	Kind        trace.Object // ObjectAllocation, ObjectHostAllocation or ObjectManagedAllocation
	Pool        uint64       // 0: not pool-allocated, or the default pool with unknown handle
	DefaultPool bool
}

// Sample is the value of a counter from time T on.
type Sample struct {
	T     int64
	Bytes uint64
}

// MemoryCounter is bytes in use over time for one key.
type MemoryCounter struct {
	Key     MemoryKey
	Samples []Sample // ordered by T; one per time at which the value changed
	Peak    uint64
}

// BytesInUse returns one counter per (process, device, kind, pool) of the
// allocations in a, sorted by key. An allocation counts from its create
// call's Start until its End (destroy call's End, context destroy, or the
// end of the trace for allocations alive at exit, which are not subtracted).
// Changes at the same time are merged into one sample.
func (a *Analysis) BytesInUse() []MemoryCounter {
	type delta struct {
		t   int64
		add int64
	}
	deltas := map[MemoryKey][]delta{}
	for i := range a.Objects {
		o := &a.Objects[i]
		switch o.Kind {
		case trace.ObjectAllocation, trace.ObjectHostAllocation, trace.ObjectManagedAllocation:
		default:
			continue
		}
		k := MemoryKey{PID: o.PID, Device: o.Device, Kind: o.Kind, Pool: o.Pool, DefaultPool: o.DefaultPool}
		deltas[k] = append(deltas[k], delta{o.Start, int64(o.Bytes)})
		if o.Reason != EndAlive {
			deltas[k] = append(deltas[k], delta{o.End, -int64(o.Bytes)})
		}
	}
	out := make([]MemoryCounter, 0, len(deltas))
	for k, ds := range deltas {
		sort.SliceStable(ds, func(i, j int) bool { return ds[i].t < ds[j].t })
		c := MemoryCounter{Key: k}
		var cur int64
		for _, d := range ds {
			cur += d.add
			if cur < 0 {
				cur = 0
			}
			if n := len(c.Samples); n > 0 && c.Samples[n-1].T == d.t {
				c.Samples[n-1].Bytes = uint64(cur)
			} else {
				c.Samples = append(c.Samples, Sample{d.t, uint64(cur)})
			}
			if uint64(cur) > c.Peak {
				c.Peak = uint64(cur)
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.less(out[j].Key) })
	return out
}

func (k MemoryKey) less(o MemoryKey) bool {
	if k.PID != o.PID {
		return k.PID < o.PID
	}
	if k.Device != o.Device {
		return k.Device < o.Device
	}
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	if k.DefaultPool != o.DefaultPool {
		return k.DefaultPool
	}
	return k.Pool < o.Pool
}
