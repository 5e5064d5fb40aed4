package analysis

import (
	"cmp"
	"math"
	"slices"

	"github.com/cuprof/cuprof/trace"
)

type objectKey struct {
	pid    uint32
	kind   trace.Object
	handle uint64
}

type devKey struct {
	pid uint32
	dev int32
}

type pathEdge struct {
	parent       PathID
	name, domain trace.StringID
}

type frameEdge struct {
	parent FrameID
	code   trace.CodeID
}

type rangeKey struct {
	pid uint32
	id  uint64
}

// open is the end of a scope whose end is not known yet (an open push range).
const open = math.MaxInt64

// scopeKind says what opened a scope of a thread's stack.
type scopeKind uint8

const (
	scopePush scopeKind = iota
	scopeSpan
	scopeFrame
)

// scope is a range or frame open on a thread: push/pop ranges, spans and
// Python frames nest in one stack per thread, by time.
type scope struct {
	kind       scopeKind
	start, end int64 // end is open until a push range's pop
	// rng is the innermost range at this scope (itself for ranges), -1;
	// path its path. frame is the innermost frame (itself for frames).
	rng   int32
	path  PathID
	frame FrameID
	scope ScopeID // the scope at this scope (itself included)
	// what was recorded inside, for the times
	calls   int64   // calls at any depth
	hooks   float64 // what the Python hooks cost inside (Cost.enclosed)
	child   int64   // times of what is directly inside
	driver  int64   // durations of the calls at any depth
	event   int     // the event that opened it
	offPath int64   // times of the frames directly inside with no call
	// frames only
	code   trace.CodeID
	flags  uint64
	native bool   // a C-level frame
	slot   uint64 // Event.SetSlot's value, handed back in Frame.Slot
}

// threadState is what the tracker knows about one thread.
type threadState struct {
	pid, tid uint32
	contexts []uint64 // the context stack; the current context is on top
	ctxGen   uint32   // Event.ContextGen
	scopes   []scope
	loose    []int32 // start/end ranges started on this thread and not ended
}

// procState is what the tracker knows about one process.
type procState struct {
	lastSeen int64
	capture  captureState // capture.go
}

// Tracker replays a trace one event at a time: Step each event in trace
// order, then Finish. It never modifies the events.
type Tracker struct {
	cfg    config
	tables *trace.Trace
	a      *Analysis
	cost   Cost
	n      int // events stepped

	threads    map[uint64]*threadState // by pid<<32 | tid
	lastThread *threadState
	prevThread *threadState // the one before lastThread (threads take turns)
	procs      map[uint32]*procState
	lastProc   *procState
	lastPID    uint32

	// devices
	objDev  objMap[int32]
	dead    objMap[deadBinding] // the bindings of the last keptDestroyed objects destroyed (unbind)
	deaths  []deadKey           // their keys, a ring, oldest at deathAt
	deathAt int
	nDeaths uint32
	devices map[devKey]bool // devices a successful call recorded
	gpus    []int32         // ordinals of the recording's GPU list
	lastDev devKey          // the device the last successful call recorded

	// objects
	live        objMap[ObjectID]
	primary     map[devKey]ObjectID
	defaultPool map[devKey]uint64
	currentPool map[devKey]uint64
	byContext   objMap[*[]member]              // the objects created in a context, by its key (addMember)
	owned       objMap[*[]member]              // what ends with an object (ownedBy)
	mappings    map[uint32]map[uint64]struct{} // live mappings' addresses per process
	// names given to handles with no live object, for the next create (names.go)
	pendingNames map[objectKey]trace.StringID
	// Forget: rows of ended objects and ranges, reused after the event
	forgotten    []ObjectID
	freeObjects  []ObjectID
	closedRanges []int32
	freeRanges   []int32

	// ranges
	started map[rangeKey]int32
	pathIx  map[pathEdge]PathID
	frameIx map[frameEdge]FrameID
	scopeIx map[scopeNode]ScopeID
	// each trie node's child found last, by parent (scopes.go)
	lastPath  []lastChild[pathEdge, PathID]
	lastScope []lastChild[scopeNode, ScopeID]
	lastFrame []lastChild[frameEdge, FrameID]

	ev    Event
	frame Frame

	gated bool // recorded in capture ranges (Meta.CaptureRange)

	syncs *syncTracker // Synchronizes (streams.go)
}

// NewTracker returns a tracker for a trace with the tables of t (Meta,
// Strings, Processes, Threads, Code; t.Events is not read). Strings and Code
// are read when results are asked for, Processes at Finish, so a streaming
// reader may fill them as it goes.
func NewTracker(t *trace.Trace, opts ...Option) *Tracker {
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	tr := &Tracker{
		cfg:         cfg,
		tables:      t,
		cost:        CostOf(&t.Meta, cfg.raw),
		threads:     map[uint64]*threadState{},
		procs:       map[uint32]*procState{},
		devices:     map[devKey]bool{},
		lastDev:     devKey{dev: trace.NoDevice},
		primary:     map[devKey]ObjectID{},
		defaultPool: map[devKey]uint64{},
		currentPool: map[devKey]uint64{},
		mappings:    map[uint32]map[uint64]struct{}{},
		started:     map[rangeKey]int32{},
		pathIx:      map[pathEdge]PathID{},
		frameIx:     map[frameEdge]FrameID{},
		scopeIx:     map[scopeNode]ScopeID{},
	}
	tr.a = &Analysis{
		Cost:    tr.cost,
		tables:  t,
		strings: t.String,
		code: func(id trace.CodeID) trace.Code {
			if int(id) < len(t.Code) {
				return t.Code[id]
			}
			return trace.Code{}
		},
		paths:  []pathNode{{}},
		frames: []frameNode{{}},
		scopes: []scopeNode{{}},
		First:  math.MaxInt64,
		Last:   math.MinInt64,
	}
	for _, g := range t.Meta.GPUs {
		tr.gpus = append(tr.gpus, g.Ordinal)
	}
	tr.gated = t.Meta.CaptureRange != ""
	tr.a.CaptureRange = t.Meta.CaptureRange
	tr.ev.tr = tr
	if cfg.syncs {
		st := newSyncTracker()
		tr.syncs = &st
	}
	return tr
}

func (tr *Tracker) thread(pid, tid uint32) *threadState {
	if th := tr.lastThread; th != nil && th.pid == pid && th.tid == tid {
		return th
	}
	th := tr.prevThread
	if th == nil || th.pid != pid || th.tid != tid {
		k := uint64(pid)<<32 | uint64(tid)
		th = tr.threads[k]
		if th == nil {
			th = &threadState{pid: pid, tid: tid}
			tr.threads[k] = th
		}
	}
	tr.prevThread, tr.lastThread = tr.lastThread, th
	return th
}

func (tr *Tracker) proc(pid uint32) *procState {
	if p := tr.lastProc; p != nil && tr.lastPID == pid {
		return p
	}
	p := tr.procs[pid]
	if p == nil {
		p = &procState{lastSeen: math.MinInt64}
		tr.procs[pid] = p
	}
	tr.lastProc, tr.lastPID = p, pid
	return p
}

// Step applies e, the next event in trace order, and returns what was
// resolved for it. The returned Event is reused by the next Step.
func (tr *Tracker) Step(e *trace.Event) *Event {
	i := tr.n
	tr.n++
	a := tr.a
	a.Events++
	a.First = min(a.First, e.Start)
	a.Last = max(a.Last, e.End, e.Start)
	p := tr.proc(e.PID)
	p.lastSeen = max(p.lastSeen, e.End, e.Start)
	th := tr.lastThread // thread's first answer, asked here: it is not inlined
	if th == nil || th.pid != e.PID || th.tid != e.TID {
		th = tr.thread(e.PID, e.TID)
	}
	if n := len(th.scopes); n > 0 && th.scopes[n-1].end < e.Start {
		tr.expire(th, e.Start) // (asked here too: most events close nothing)
	}

	ev := &tr.ev
	// Field by field, not *ev = Event{...}: the composite literal is built
	// on the stack and copied, and that copy stalled on store forwarding
	// (a quarter of Step's own time in perf's annotation).
	ev.Event, ev.Index, ev.Device, ev.Context, ev.Duration, ev.Error = e, i, e.Device, 0, 0, false
	ev.ContextGen = th.ctxGen
	ev.Object, ev.AuxObject, ev.Ended = NoObject, NoObject, ev.Ended[:0]
	ev.Range, ev.Path, ev.Frame, ev.Scope, ev.Outer, ev.Outside, ev.Sync = -1, noPath, NoFrame, NoScope, -1, false, SyncNone
	if ev.tr != tr {
		ev.tr = tr
	}
	if n := len(th.scopes); n > 0 {
		ev.Outer = th.scopes[n-1].event // before e opens anything
	}
	switch e.Kind {
	case trace.KindCall:
		a.Calls++
		if tr.outside(e, p) {
			ev.Outside = true
			a.OutsideCalls++
		}
		ev.Context = currentContext(th)
		ev.Duration = tr.cost.callNs(e)
		ev.Error = isError(e)
		switch {
		case ev.Device == trace.NoDevice:
			ev.Device = tr.attribute(e, ev.Context)
		case e.Result.OK():
			tr.seeDevice(e.PID, ev.Device)
		case !tr.knownDevice(e.PID, ev.Device):
			// a failed call naming a device nothing showed, such as
			// cuDeviceGet(9999): no such device, and the call is on none
			ev.Device = trace.NoDevice
		}
		f := factsOf(e.API)
		if f.binds {
			tr.bind(e, ev.Device, ev.Context)
		} else if f.unbinds && e.Result.OK() {
			tr.unbind(e)
		}
		tr.resolvePath(th, ev)
		if tr.syncs != nil && e.Result.OK() {
			ev.Sync = tr.syncs.step(e, ev.Device)
		}
		tr.objects(i, e, ev, th)
		if f.contexts {
			stepContexts(th, e)
		}
		if n := len(th.scopes); n > 0 {
			s := &th.scopes[n-1]
			s.calls++
			s.child += ev.Duration
			s.driver += ev.Duration
		}
	case trace.KindRangePush, trace.KindSpan, trace.KindFrame:
		tr.openScope(i, e, th)
		tr.resolvePath(th, ev)
		if e.Kind != trace.KindRangePush {
			ev.Duration = e.Duration()
		}
	case trace.KindRangePop:
		tr.resolvePath(th, ev)
		tr.pop(i, e, th)
	case trace.KindRangeStart:
		tr.startRange(i, e, th)
		tr.resolvePath(th, ev)
	case trace.KindRangeEnd:
		tr.resolvePath(th, ev)
		tr.endRange(i, e)
	case trace.KindCapture:
		tr.stepCapture(e, p)
		tr.resolvePath(th, ev)
	case trace.KindObjectName:
		tr.nameObject(e)
		tr.resolvePath(th, ev)
	default:
		tr.resolvePath(th, ev)
	}
	if tr.cfg.onEvent != nil {
		tr.cfg.onEvent(ev)
	}
	if tr.cfg.forget {
		tr.recycle()
	}
	return ev
}

// recycle makes the rows of the objects and ranges that ended during the
// last event free for reuse (Forget).
func (tr *Tracker) recycle() {
	if len(tr.forgotten) > 0 {
		//lint:ignore S1011 one or two: not worth memmove's call
		for _, j := range tr.forgotten {
			tr.freeObjects = append(tr.freeObjects, j)
		}
		tr.forgotten = tr.forgotten[:0]
	}
	if len(tr.closedRanges) > 0 {
		for _, r := range tr.closedRanges {
			tr.a.Ranges[r] = Range{Parent: -1, Open: -1, Close: -1} // Origin 0: a free row
			tr.freeRanges = append(tr.freeRanges, r)
		}
		tr.closedRanges = tr.closedRanges[:0]
	}
}

// resolvePath fills the enclosing range, path and frame of ev: the
// innermost push/pop range or span of its thread, else the latest start/end
// range its thread started and has not ended.
func (tr *Tracker) resolvePath(th *threadState, ev *Event) {
	if n := len(th.scopes); n > 0 {
		s := &th.scopes[n-1]
		ev.Frame, ev.Scope = s.frame, s.scope
		if s.rng >= 0 {
			ev.Range, ev.Path = s.rng, s.path
			return
		}
	}
	if n := len(th.loose); n > 0 {
		r := th.loose[n-1]
		ev.Range, ev.Path = r, tr.a.Ranges[r].Path
	}
}

// Finish closes what the trace left open and returns the analysis. The
// tracker must not be used after.
func (tr *Tracker) Finish() *Analysis {
	a := tr.a
	if a.Events == 0 {
		a.First, a.Last = 0, 0
	}
	// ranges never closed end at their process's last event
	for i := range a.Ranges {
		r := &a.Ranges[i]
		if r.Close < 0 && r.Origin != trace.KindSpan && r.Origin != 0 {
			r.End = tr.procs[r.PID].lastSeen
			r.Unterminated = true
		}
	}
	for _, th := range tr.sortedThreads() {
		for len(th.scopes) > 0 {
			s := &th.scopes[len(th.scopes)-1]
			if s.end == open {
				s.end = a.Ranges[s.rng].End
			}
			tr.closeScope(th)
		}
	}
	for _, th := range tr.sortedThreads() {
		for _, r := range th.loose {
			tr.rangeEnded(r)
		}
		th.loose = nil
	}
	if tr.cfg.forget {
		// what is left: the objects alive at the end, in creation order
		alive := a.Objects[:0]
		for _, o := range a.Objects {
			if o.Reason == EndAlive {
				alive = append(alive, o)
			}
		}
		slices.SortFunc(alive, func(x, y Object) int { return cmp.Compare(x.Create, y.Create) })
		a.Objects, a.Ranges = alive, nil
	}
	for j := range a.Objects {
		o := &a.Objects[j]
		if o.Reason != EndAlive {
			continue
		}
		o.End = tr.procs[o.PID].lastSeen
		if p := tr.tables.Process(o.PID); p != nil && p.End > o.End {
			o.End = p.End
		}
		if tr.cfg.onObject != nil {
			tr.cfg.onObject(o)
		}
	}
	return a
}
