package analysis

import (
	"iter"
	"strings"

	"github.com/cuprof/cuprof/trace"
)

// Events returns t's events in their stored order (trace.SortEvents order
// for a trace read by package trace).
func Events(t *trace.Trace) iter.Seq[*trace.Event] {
	return func(yield func(*trace.Event) bool) {
		for i := range t.Events {
			if !yield(&t.Events[i]) {
				return
			}
		}
	}
}

// Of analyses the whole of t, calling the options' visitors on the way. It
// does not modify t.
func Of(t *trace.Trace, opts ...Option) *Analysis {
	return Run(t, Events(t), opts...)
}

// Run replays events (in trace order) against the tables of t (its Meta,
// Strings, Processes, Threads and Code; its Events are not read) and returns
// the analysis. It modifies neither t nor the events.
func Run(t *trace.Trace, events iter.Seq[*trace.Event], opts ...Option) *Analysis {
	tr := NewTracker(t, opts...)
	for e := range events {
		tr.Step(e)
	}
	return tr.Finish()
}

// Option tunes an analysis.
type Option interface{ apply(*config) }

type config struct {
	raw      bool
	onEvent  func(*Event)
	onRange  func(*Range)
	onFrame  func(*Frame)
	onObject func(*Object)
	forget   bool
	syncs    bool // Synchronizes
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Raw keeps times as recorded: no calibrated cost is subtracted.
func Raw() Option { return optionFunc(func(c *config) { c.raw = true }) }

// Forget keeps no row for an object or a range once it ended and its
// callback (OnObjectEnd, OnRangeEnd) saw it: the tables then grow with what
// is open at one time, not with everything the trace made, for consumers
// that sum what they need in the callbacks (report does). Rows are reused:
// an ObjectID or a range index is valid only during the callbacks of the
// event that resolved it, and a Range's Parent only while the parent is
// open. After Finish, Analysis.Objects holds only the objects alive at the
// end (so Summary, Alive and BytesInUse cover those) and Ranges is empty.
func Forget() Option { return optionFunc(func(c *config) { c.forget = true }) }

// OnEvent calls f for every event, in trace order, once the tracker has
// applied it. The Event (and the slices it holds) is reused: it is valid
// only during the call.
func OnEvent(f func(*Event)) Option { return optionFunc(func(c *config) { c.onEvent = f }) }

// OnRangeEnd calls f when a range's extent and times are final: when its
// thread moves past its end, or at Finish for ranges still open then. The
// Range is the one in Analysis.Ranges; do not keep the pointer past the
// call (the table may grow).
func OnRangeEnd(f func(*Range)) Option { return optionFunc(func(c *config) { c.onRange = f }) }

// OnFrameEnd calls f for every Python frame activation once its times are
// final. The Frame is reused: it is valid only during the call.
func OnFrameEnd(f func(*Frame)) Option { return optionFunc(func(c *config) { c.onFrame = f }) }

// OnObjectEnd calls f when an object's life ends (destroyed, ended with its
// context, replaced), and at Finish for those still alive. Do not keep the
// pointer past the call.
func OnObjectEnd(f func(*Object)) Option { return optionFunc(func(c *config) { c.onObject = f }) }

// PathID names a path of enclosing ranges (NVTX push/pop and start/end
// ranges, cudawrap spans), outermost first. 0 is the empty path (noPath).
type PathID uint32

// noPath is the path of an event no range encloses.
const noPath PathID = 0

// FrameID names a Python stack: a path of frames (code), outermost first.
// NoFrame is the empty stack.
type FrameID uint32

// NoFrame is the stack of an event no Python frame encloses.
const NoFrame FrameID = 0

// ScopeID names everything enclosing an event on its thread: its ranges
// (push/pop, spans) and Python frames interleaved as they nest, outermost
// first (start/end ranges, which do not nest, are not in it). NoScope is the
// empty one. It is what a flame graph stacks.
type ScopeID uint32

// NoScope is the scope of an event nothing encloses.
const NoScope ScopeID = 0

// ObjectID indexes Analysis.Objects. NoObject is "none".
type ObjectID int32

// NoObject is the ObjectID of events that name no tracked object.
const NoObject ObjectID = -1

// Event is one event of the trace with what the tracker resolved for it.
type Event struct {
	// Event is the event as recorded (its Device is the recorded one).
	*trace.Event
	// Index is the event's position in trace order.
	Index int
	// Device is the device the event belongs to: for calls, the recorded
	// device or else the one attributed, NoDevice for a failed call
	// recording a device that does not exist (see the package doc); for
	// other events, the recorded one.
	Device int32
	// Context is the thread's current context before the call, 0 when none.
	Context uint64
	// ContextGen counts, on the event's thread, the successful calls
	// before it that set, pushed, popped, created or destroyed a context,
	// or released or reset a primary context: two calls with the same
	// ContextGen saw no change of the thread's context in between.
	ContextGen uint32
	// Duration is, for calls, End-Start less Cost.InsideNs (clamped at 0);
	// for spans and frames, End-Start as recorded (see Range and Frame for
	// times with the cost taken out); 0 for other events.
	Duration int64
	// Error applies the error rule (isError) to calls.
	Error bool
	// Object is the object the call created, destroyed, retained, released,
	// got or used (its Handle), NoObject when none was tracked.
	Object ObjectID
	// AuxObject is the second object the call names through its Aux
	// argument when the API table gives it an effect (trace.APIInfo's
	// AuxObject): the graph a cuGraphInstantiate instantiates, the capture
	// a cuStreamEndCapture ends, the library a cuLibraryGetKernel reads;
	// NoObject when none was tracked.
	AuxObject ObjectID
	// Ended lists the objects this call ended besides Object: those
	// created in a destroyed context, an object whose handle a create
	// returned again without a destroy, the kernels and functions of an
	// unloaded library, the capture a cuStreamEndCapture ended, the
	// further mappings one cuMemUnmap unmapped. Reused between events.
	Ended []ObjectID
	// Range is the innermost range enclosing the event (an index into
	// Analysis.Ranges), -1 when none; Path is its path (0 when none).
	// A range-opening event is enclosed by the range it opens.
	Range int32
	Path  PathID
	// Frame is the Python stack enclosing the event; a frame event is
	// enclosed by its own frame.
	Frame FrameID
	// Scope is the ranges and frames enclosing the event, as they nest.
	Scope ScopeID
	// Outer is the activation Scope ends in: the index of the event that
	// opened the innermost push/pop range, span or frame around the event
	// on its thread, -1 when none. Unlike Range and Scope it never names
	// the event itself: for an event that opens a range or frame it is the
	// one around what it opens, so that consumers drawing each activation
	// (spans, slices) know its parent.
	Outer int
	// Sync says whether a successful synchronize call was idle (SyncIdle)
	// or waited for work (SyncBusy); SyncNone for other events and when
	// the replay was not asked to follow it (Synchronizes).
	Sync SyncState
	// Outside is set for a call recorded outside every capture range of
	// its process (a trace made with capture ranges keeps the calls that
	// create, destroy and switch objects and contexts there): it counts
	// for objects, devices and contexts, not among what the ranges hold.
	Outside bool

	tr *Tracker
}

// ContextDevice returns the device of the event's Context, or NoDevice.
func (e *Event) ContextDevice() int32 {
	if e.Context == 0 {
		return trace.NoDevice
	}
	d, _ := e.tr.devOf(e.PID, trace.ObjectContext, e.Context)
	return d
}

// Created reports whether the event is the call that created its Object (a
// create, or a primary context's first retain), so that consumers keying
// objects by creation site need no rule of their own. It is valid only while
// the event is.
func (e *Event) Created() bool {
	if e.Object == NoObject || e.tr == nil || int(e.Object) >= len(e.tr.a.Objects) {
		return false
	}
	return e.tr.a.Objects[e.Object].Create == e.Index
}

// Analysis returns the analysis as far as the replay has gone, for a
// consumer that needs the tables while it streams: the names of every
// PathID, FrameID and ScopeID handed out so far are final (PathString,
// FrameStack, ScopeFrame), and Objects[e.Object] is the object the event
// names. Objects and Ranges change as the replay goes on (with Forget, rows
// are reused): read them only during the event's callbacks. It is the
// Analysis that Finish returns.
func (e *Event) Analysis() *Analysis {
	if e.tr == nil {
		return nil
	}
	return e.tr.a
}

// InRange returns the innermost range enclosing the event (Range), nil when
// none: a push/pop range or span, or the start/end range its thread started
// when none of those encloses it (Origin says which). It is valid only
// while the event is.
func (e *Event) InRange() *Range {
	if e.Range < 0 || e.tr == nil || int(e.Range) >= len(e.tr.a.Ranges) {
		return nil
	}
	return &e.tr.a.Ranges[e.Range]
}

// Times are what a range or a frame took, with the calibrated cost (Cost)
// of the calls and frames recorded inside it taken out.
type Times struct {
	// InclusiveNs is End-Start less the cost of what was recorded inside.
	InclusiveNs int64
	// SelfNs is InclusiveNs less the InclusiveNs of the ranges and frames
	// directly inside and the durations of the calls directly inside.
	SelfNs int64
	// DriverNs is the time of the driver calls inside, at any depth (each
	// less InsideNs); Calls is how many there were.
	DriverNs int64
	Calls    int
	// OffPathNs is the InclusiveNs of the frames directly inside that made
	// no driver call: Python work a wrapper does besides reaching the
	// driver (an options object, a weakref.finalize, an error check).
	// SelfNs+OffPathNs is then the wrapper's own cost, whether or not the
	// capture recorded those frames.
	OffPathNs int64
}

// Range is a user range: an NVTX push/pop or start/end pair, or a cudawrap
// span.
type Range struct {
	// Range holds PID, TID (of the opening thread), Start, End, Name,
	// Domain, Depth (the length of the parent chain; -1 for start/end
	// ranges), Unterminated, Origin and ID as trace.Ranges defines them.
	trace.Range
	// Parent is the range this one is nested in on its thread (an index
	// into Analysis.Ranges), -1 when none. Push/pop ranges and spans nest by
	// time; start/end ranges are never nested nor parents.
	Parent int32
	// Path is the path of the range itself (its parents' names and its own).
	Path PathID
	// Stack is the Python stack the range was opened in; Scope the range's
	// own scope (what encloses it, and itself; NoScope for start/end ranges).
	Stack FrameID
	Scope ScopeID
	// Open is the index of the event that opened it; Close the index of the
	// pop or end event, -1 for spans and ranges never closed.
	Open, Close int
	// Outer is the activation the range is directly inside: the index of
	// the event that opened the innermost push/pop range, span or frame
	// around it on its thread (its opening event's Event.Outer), -1 when
	// none and for start/end ranges, which do not nest. A consumer drawing
	// each activation parents the range by it.
	Outer int
	// EndTID is the thread of the closing event (start/end ranges may end
	// on another thread); TID for spans and unterminated ranges.
	EndTID uint32
	// Slot is the consumer's own value for the range, set by
	// Event.SetSlot at the event that opened it (0 when none was).
	Slot uint64
	// Times of push/pop ranges and spans (start/end ranges do not nest:
	// their Times are zero).
	Times
}

// Frame is one Python frame activation (a trace.KindFrame event) with its
// times.
type Frame struct {
	Open int // index of the frame event (as Range.Open)
	// Outer is the activation the frame is directly inside (its event's
	// Event.Outer): the index of the event that opened the innermost
	// range, span or frame around it, -1 when none.
	Outer      int
	PID, TID   uint32
	Code       trace.CodeID
	Start, End int64
	Flags      uint64 // trace.FrameFlag bits
	// Stack is the frame's own stack (its callers and itself).
	Stack FrameID
	// Path is the path of ranges enclosing it; Scope its own scope.
	Path  PathID
	Scope ScopeID
	// Slot is the consumer's own value for the activation, set by
	// Event.SetSlot at its frame event (0 when none was).
	Slot uint64
	Times
}

// Ending says how a frame activation ended: "returned", "unwound" (an
// exception propagated out of it), "yielded" (a generator or coroutine was
// suspended) or "open" (still running when recording stopped).
func (f *Frame) Ending() string {
	switch {
	case f.Flags&trace.FrameOpen != 0:
		return "open"
	case f.Flags&trace.FrameUnwound != 0:
		return "unwound"
	case f.Flags&trace.FrameYielded != 0:
		return "yielded"
	}
	return "returned"
}

// FrameStats sums the activations of one Python stack (one FrameID).
type FrameStats struct {
	// Activations is how many times the frame ran (its "calls").
	Activations int
	// Times summed over those activations.
	Times
	// Unwound and Open count activations ended by an exception and those
	// still running when recording stopped.
	Unwound, Open int
}

// frameNode is one node of the frame trie.
type frameNode struct {
	parent FrameID
	code   trace.CodeID
	// recursive is set when code also appears above this node.
	recursive bool
	stats     FrameStats
}

// pathNode is one node of the range path trie.
type pathNode struct {
	parent       PathID
	name, domain trace.StringID
}

// scopeNode is one node of the scope trie: a range (name, domain) or a
// frame (code).
type scopeNode struct {
	parent       ScopeID
	frame        bool
	name, domain trace.StringID
	code         trace.CodeID
}

// Analysis is what the replay resolved: the tables every consumer reads.
type Analysis struct {
	// Cost is the calibrated cost the times have taken out.
	Cost Cost
	// Objects are every object's life, in the order of their create calls.
	Objects []Object
	// Problems are destroys and releases of objects the trace never saw
	// created (made before recording started, or already destroyed).
	Problems []Problem
	// RangeProblems are range events that could not be paired: a pop with
	// nothing open, an end of an unknown range id, an id started twice.
	RangeProblems []trace.RangeProblem
	// Ranges are every range, in the order they were opened.
	Ranges []Range
	// Events and Calls count what was replayed; First and Last are the
	// earliest start and latest end (0 when there were no events).
	Events, Calls int
	First, Last   int64
	// CaptureRange is how the trace was captured (trace.Meta.CaptureRange,
	// "" for everything); Captures its capture ranges, in trace order;
	// OutsideCalls the calls among Calls outside them (Event.Outside).
	CaptureRange string
	Captures     []Capture
	OutsideCalls int

	strings func(trace.StringID) string
	code    func(trace.CodeID) trace.Code
	tables  *trace.Trace // for names (names.go)
	sites   *Sites
	paths   []pathNode
	frames  []frameNode
	scopes  []scopeNode
}

// Alive returns the objects still alive at the end of the trace.
func (a *Analysis) Alive() []*Object {
	var out []*Object
	for i := range a.Objects {
		if a.Objects[i].Alive() {
			out = append(out, &a.Objects[i])
		}
	}
	return out
}

// PathString returns the names of the ranges of p, outermost first, joined
// by "/"; "" for the empty path.
func (a *Analysis) PathString(p PathID) string {
	if p == noPath || int(p) >= len(a.paths) {
		return ""
	}
	n := 0
	for q := p; q != noPath; q = a.paths[q].parent {
		n++
	}
	names := make([]string, n)
	for q := p; q != noPath; q = a.paths[q].parent {
		n--
		names[n] = a.strings(a.paths[q].name)
	}
	return strings.Join(names, "/")
}

// pathParent returns the path p is nested in, 0 at the top.
func (a *Analysis) pathParent(p PathID) PathID {
	if int(p) >= len(a.paths) {
		return noPath
	}
	return a.paths[p].parent
}

// Stacks returns how many FrameIDs there are: IDs 1..Stacks()-1 are valid.
func (a *Analysis) Stacks() int { return len(a.frames) }

// FrameParent returns the stack f was called from, NoFrame at the top.
func (a *Analysis) FrameParent(f FrameID) FrameID {
	if int(f) >= len(a.frames) {
		return NoFrame
	}
	return a.frames[f].parent
}

// FrameCode returns the code of the innermost frame of f (0 for NoFrame).
func (a *Analysis) FrameCode(f FrameID) trace.CodeID {
	if int(f) >= len(a.frames) {
		return 0
	}
	return a.frames[f].code
}

// FrameStats returns the summed activations of stack f.
func (a *Analysis) FrameStats(f FrameID) FrameStats {
	if f == NoFrame || int(f) >= len(a.frames) {
		return FrameStats{}
	}
	return a.frames[f].stats
}

// FrameStack returns the code of the frames of f, outermost first.
func (a *Analysis) FrameStack(f FrameID) []trace.CodeID {
	n := 0
	for q := f; q != NoFrame && int(q) < len(a.frames); q = a.frames[q].parent {
		n++
	}
	out := make([]trace.CodeID, n)
	for q := f; q != NoFrame && int(q) < len(a.frames); q = a.frames[q].parent {
		n--
		out[n] = a.frames[q].code
	}
	return out
}

// ScopeParent returns the scope s is nested in, NoScope at the top.
func (a *Analysis) ScopeParent(s ScopeID) ScopeID {
	if int(s) >= len(a.scopes) {
		return NoScope
	}
	return a.scopes[s].parent
}

// ScopeFrame returns the innermost element of s: a Python frame's code
// (frame true) or a range's name and domain (frame false).
func (a *Analysis) ScopeFrame(s ScopeID) (frame bool, code trace.CodeID, name, domain trace.StringID) {
	if s == NoScope || int(s) >= len(a.scopes) {
		return false, 0, 0, 0
	}
	n := &a.scopes[s]
	return n.frame, n.code, n.name, n.domain
}

// CodeStats sums the activations of one piece of code over all the stacks
// it ran in.
type CodeStats struct {
	Code trace.CodeID
	FrameStats
}

// ByCode returns the frame totals per code, most self time first (then by
// code). SelfNs and OffPathNs sum every activation; InclusiveNs, DriverNs and Calls count
// only activations with no activation of the same code above them, so that
// recursion is not counted twice.
func (a *Analysis) ByCode() []CodeStats {
	idx := map[trace.CodeID]int{}
	var out []CodeStats
	for f := 1; f < len(a.frames); f++ {
		n := &a.frames[f]
		if n.stats.Activations == 0 {
			continue
		}
		j, ok := idx[n.code]
		if !ok {
			j = len(out)
			idx[n.code] = j
			out = append(out, CodeStats{Code: n.code})
		}
		c := &out[j]
		c.Activations += n.stats.Activations
		c.SelfNs += n.stats.SelfNs
		c.OffPathNs += n.stats.OffPathNs
		c.Unwound += n.stats.Unwound
		c.Open += n.stats.Open
		if !n.recursive {
			c.InclusiveNs += n.stats.InclusiveNs
			c.DriverNs += n.stats.DriverNs
			c.Calls += n.stats.Calls
		}
	}
	sortCodeStats(out)
	return out
}
