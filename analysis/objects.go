package analysis

import (
	"sort"

	"github.com/cuprof/cuprof/internal/quantile"
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
	// EndOwner: what owned it ended: the library its kernel or module came
	// from was unloaded, the kernel or module of a function, the stream of
	// a capture was destroyed.
	EndOwner
)

var endNames = [...]string{"alive", "destroyed", "context-destroyed", "replaced", "owner-ended"}

// String returns the reason's name.
func (r EndReason) String() string {
	if int(r) < len(endNames) {
		return endNames[r]
	}
	return "?"
}

// Object is one CUDA object's life. (Fields are grouped by size, to keep
// the table small: an object costs about 136 bytes.)
type Object struct {
	Kind   trace.Object
	Reason EndReason
	// DefaultPool: see Pool. Primary: a primary context (retain/release
	// counted).
	DefaultPool, Primary bool
	PID                  uint32
	Device               int32  // device of the create call, trace.NoDevice when unknown
	TID                  uint32 // thread of the create call
	// Retains counts a primary context's retains seen, or the references
	// cuMemRetainAllocationHandle added to physical memory (each needs a
	// cuMemRelease of its own); Uses the successful
	// calls naming the object (role use/get; streams: also as stream
	// argument).
	Retains, Uses int32
	// Path, Frame and Scope are the ranges, the Python stack and both
	// interleaved around the create call: the object's creation site.
	Path  PathID
	Frame FrameID
	Scope ScopeID
	// Name is the name the program gave it (trace.KindObjectName; see
	// Analysis.ObjectName), 0 when none.
	Name   trace.StringID
	Handle uint64
	// Create is the index of the call that created it (for a primary
	// context, its first retain). Destroy is the index of the call that
	// destroyed it, -1 when it is alive at the end, ended with its context or
	// was replaced (see Reason). Ender is the index of the call that ended it
	// in any way (the destroy, the context's destroy, the replacing create),
	// -1 when alive.
	Create, Destroy, Ender int
	// Start is the create call's Start; End is the destroy call's End, the
	// context destroy's End, the replacing create's Start, or (alive) the
	// last time seen in the process.
	Start, End int64
	Caller     uint64 // return address of the create call
	Bytes      uint64 // allocations: size requested
	// Pool is the pool an allocation came from: cuMemAllocFromPoolAsync's
	// pool, or for cuMemAllocAsync the device's current pool (set by
	// cuDeviceSetMemPool) else its default pool. DefaultPool is set when the
	// allocation came from the device's default pool; Pool is then its handle
	// when the trace saw cuDeviceGetDefaultMemPool, else 0.
	Pool   uint64
	Stream uint64 // stream argument of the create call (async allocations); a stream's or a capture's stream
	// Parent is the handle of the object it was made from: a graph exec's
	// graph, a mapping's physical memory, a kernel's or module's library, a
	// function's kernel or module, a capture's stream; 0 when none.
	Parent  uint64
	Context uint64 // context current on the creating thread, 0 when none
	Flags   uint64 // flags argument of the create call
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

// Problem is a call the analysis could not pair with an object.
type Problem struct {
	Event  int // index of the event
	Kind   trace.Object
	Handle uint64
	Reason string
}

// KindSummary sums up the objects of one kind.
type KindSummary struct {
	Kind      trace.Object
	Created   int
	Destroyed int    // by a destroy call
	Implicit  int    // ended with their context or replaced
	Alive     int    // alive at the end of the trace
	Churn     int    // destroyed within ChurnWindow of creation
	Bytes     uint64 // total bytes created (allocations)
	// lifetimes of the destroyed objects (by a call): see Lifetime
	lifetimes *quantile.Sketch
}

// Lifetime returns the p-th percentile (0 < p <= 100) of the lifetimes of
// the objects destroyed by a call, 0 when none: the nearest-rank value up
// to quantile.DefaultLimit (2^20) of them, within 1% past that, so that a
// summary's memory does not grow with the number of objects.
func (s *KindSummary) Lifetime(p float64) int64 {
	if s.lifetimes == nil || s.lifetimes.Count() == 0 {
		return 0
	}
	return s.lifetimes.Quantile(p)
}

// Summary returns one KindSummary per object kind that occurs, in
// trace.Objects order.
func (a *Analysis) Summary() []KindSummary { return a.summaryWhere(nil) }

// summaryWhere is Summary over the objects keep accepts (all when nil), for
// per-device or per-process tables.
func (a *Analysis) summaryWhere(keep func(*Object) bool) []KindSummary {
	var t Tally
	for i := range a.Objects {
		if o := &a.Objects[i]; keep == nil || keep(o) {
			t.Add(o)
		}
	}
	return t.Summary()
}

// Tally sums objects into per-kind summaries one at a time, for consumers
// that see each object once its life is over (OnObjectEnd, with Forget).
// The zero value is ready to use.
type Tally struct {
	// by kind (a uint8): a slice, as a map keyed by a uint8 hashes it the
	// slow way, once per object
	by []*KindSummary
}

// of returns the summary of kind k, made when there is none.
func (t *Tally) of(k trace.Object) *KindSummary {
	if int(k) < len(t.by) {
		if s := t.by[k]; s != nil {
			return s
		}
	} else {
		t.by = append(t.by, make([]*KindSummary, int(k)+1-len(t.by))...)
	}
	s := &KindSummary{Kind: k}
	t.by[k] = s
	return s
}

// Add counts o.
func (t *Tally) Add(o *Object) {
	s := t.of(o.Kind)
	s.Created++
	s.Bytes += o.Bytes
	switch o.Reason {
	case EndDestroyed:
		s.Destroyed++
		if s.lifetimes == nil {
			s.lifetimes = &quantile.Sketch{}
		}
		s.lifetimes.Add(o.Lifetime())
		if o.Churn(ChurnWindow) {
			s.Churn++
		}
	case EndAlive:
		s.Alive++
	default:
		s.Implicit++
	}
}

// Merge adds the objects o counted to t (o is not changed), for a total
// over per-device or per-process tallies. Lifetime percentiles stay exact
// while the merged count is within the sketch's limit.
func (t *Tally) Merge(o *Tally) {
	for k, os := range o.by {
		if os == nil {
			continue
		}
		s := t.of(trace.Object(k))
		s.Created += os.Created
		s.Destroyed += os.Destroyed
		s.Implicit += os.Implicit
		s.Alive += os.Alive
		s.Churn += os.Churn
		s.Bytes += os.Bytes
		if os.lifetimes != nil {
			if s.lifetimes == nil {
				s.lifetimes = &quantile.Sketch{}
			}
			s.lifetimes.Merge(os.lifetimes)
		}
	}
}

// Summary returns one KindSummary per object kind counted, in
// trace.Objects order.
func (t *Tally) Summary() []KindSummary {
	var out []KindSummary
	for _, k := range trace.Objects() {
		if int(k) < len(t.by) && t.by[k] != nil {
			out = append(out, *t.by[k])
		}
	}
	return out
}

// MemoryKey names one bytes-in-use counter: the allocations of one kind
// (device, host or managed) of one process, device and pool.
type MemoryKey struct {
	PID         uint32
	Device      int32
	Kind        trace.Object // ObjectAllocation, ObjectHostAllocation, ObjectManagedAllocation or ObjectMapping
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
// allocations, sorted by key. An allocation counts from its create call's
// Start until its End (destroy call's End, context destroy, or the end of
// the trace for allocations alive at exit, which are not subtracted).
// Changes at the same time are merged into one sample.
func (a *Analysis) BytesInUse() []MemoryCounter {
	type delta struct {
		t   int64
		add int64
	}
	deltas := map[MemoryKey][]delta{}
	for i := range a.Objects {
		o := &a.Objects[i]
		if !IsAllocation(o.Kind) {
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

// IsAllocation reports whether objects of kind k are memory: device, host
// (pinned) or managed allocations, or physical memory mapped at an address
// (cuMemMap): what a virtual-memory allocator such as PyTorch's expandable
// segments hands out is the mapped memory, so it counts in BytesInUse the
// way an allocation does (the physical handles and reserved ranges behind
// it do not, or it would count twice).
func IsAllocation(k trace.Object) bool {
	switch k {
	case trace.ObjectAllocation, trace.ObjectHostAllocation, trace.ObjectManagedAllocation, trace.ObjectMapping:
		return true
	}
	return false
}

func sortCodeStats(cs []CodeStats) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].SelfNs != cs[j].SelfNs {
			return cs[i].SelfNs > cs[j].SelfNs
		}
		return cs[i].Code < cs[j].Code
	})
}
