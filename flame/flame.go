// Package flame turns a cuprof trace into a pprof profile
// (github.com/google/pprof/profile), so that `go tool pprof`, its web UI and
// every flame graph viewer that reads pprof can show where per-call time goes.
//
// # Stacks
//
// Build replays the trace once through package analysis and stacks what it
// resolved; it interprets nothing itself. A sample's stack is, outermost
// first:
//
//   - optionally "[process PID] exe" and "[thread TID] name" roots
//     (WithProcessRoots, WithThreadRoots);
//   - the NVTX start/end range enclosing the event, when no push/pop range
//     or span does (the analysis' rule: such ranges do not nest, and enclose
//     the events of the thread that started them);
//   - the analysis' scope: the NVTX push/pop ranges, cudawrap spans and
//     Python frames open on the thread, interleaved as they nest. A Python
//     frame is a function named by its qualified name (its module in the
//     system name) with its source file and first line; a C callable called
//     from Python (a Cython cyfunction, a ctypes function) has its module as
//     the file;
//   - the caller of the driver call, symbolized as "libfoo.so:my_alloc" when
//     the trace carries Mappings and Symbols for its process;
//   - the driver call, named by its API base name (cuMemAllocAsync).
//
// Range events the analysis could not pair (a pop with nothing open, the end
// of an unknown range ID) and ranges never closed are reported as warnings.
//
// # Views
//
// ViewAPI has sample types calls/count and time/nanoseconds. time is self
// time as the analysis computes it: a driver call's duration less the
// capture's calibrated cost per call (trace.Meta.Overhead.InsideNs, clamped
// at 0), and a range's or Python frame's inclusive time (less the whole cost
// of the calls and Python events recorded inside it, AddedNs and PyEventNs)
// less the inclusive times of what is directly inside it, so that a
// wrapper's own cost is a wide bar of its own and pprof's cumulative time is
// the inclusive time. The profile's comments say what was subtracted. calls
// counts driver calls only.
//
// ViewMemory has alloc_objects/count, alloc_space/bytes, inuse_objects/count
// and inuse_space/bytes (allocations still alive at the end of the trace),
// keyed by the allocation site: the stack, Python frames included, at the
// call that made the allocation.
//
// ViewLifetime has objects/count and lifetime/nanoseconds for every object
// the analysis tracked (streams, events, allocations, pools, contexts,
// modules), keyed by creation site; a lifetime is the analysis' (the create
// call's start to the ending call's end, or to the process's last event for
// objects still alive). The label state says how the life ended: destroyed,
// context-destroyed, replaced, owner-ended, or live (never ended).
//
// # Labels
//
// Samples carry low-cardinality string labels only: api, category, device,
// result (only when not CUDA_SUCCESS), thread (its name), object (lifetime
// view) and state, object_name (memory and lifetime views: the name the
// program gave the object, analysis.Analysis.ObjectName, on the objects it
// named); and the numeric label bytes (unit bytes) on allocations and
// copies, so that `pprof -tagfocus=bytes=1mb:` works. Handles and IDs are never
// labels.
//
// # Cost
//
// The analysis replays the events once. Samples are aggregated by stack and
// label values as they are found, and functions and locations are
// deduplicated by value, so memory grows with the distinct stacks (and, in
// the memory and lifetime views, with the objects alive at one time), not
// with the number of events.
package flame

import (
	"errors"
	"fmt"
	"regexp"
)

// View selects what a profile measures.
type View uint8

const (
	// ViewAPI: calls and self time per stack.
	ViewAPI View = iota
	// ViewMemory: allocations by allocation site.
	ViewMemory
	// ViewLifetime: object lifetimes by creation site.
	ViewLifetime
)

var viewNames = [...]string{ViewAPI: "api", ViewMemory: "memory", ViewLifetime: "lifetime"}

// String returns the view's name as the command line spells it.
func (v View) String() string {
	if int(v) < len(viewNames) {
		return viewNames[v]
	}
	return fmt.Sprintf("View(%d)", uint8(v))
}

// ParseView returns the view named s (api, memory or lifetime).
func ParseView(s string) (View, error) {
	for v, n := range viewNames {
		if n == s {
			return View(v), nil
		}
	}
	return 0, fmt.Errorf("unknown view %q: use api, memory or lifetime", s)
}

// ErrUnsorted is returned by Build when the trace's events are not in
// trace.SortEvents order.
var ErrUnsorted = errors.New("events are not in trace order")

// ErrNoTrace is returned by Build for a nil trace.
var ErrNoTrace = errors.New("no trace")

// Warning reports an event Build could not place in a stack as the trace
// said; the profile is built anyway.
type Warning struct {
	Event  int // index into Trace.Events, or -1 when about no one event
	Reason string
}

func (w Warning) String() string {
	if w.Event < 0 {
		return w.Reason
	}
	return fmt.Sprintf("event %d: %s", w.Event, w.Reason)
}

// MaxWarnings is how many warnings Build returns; the last one counts the
// warnings left out beyond it.
const MaxWarnings = 100

type config struct {
	view        View
	processRoot bool
	threadRoot  bool
	focus       *regexp.Regexp
}

// Option configures Build.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithView selects the view (ViewAPI by default).
func WithView(v View) Option { return optionFunc(func(c *config) { c.view = v }) }

// WithProcessRoots puts a "[process PID] exe" frame at the root of every stack.
func WithProcessRoots() Option { return optionFunc(func(c *config) { c.processRoot = true }) }

// WithThreadRoots puts "[process PID] exe" and "[thread TID] name" frames at
// the root of every stack.
func WithThreadRoots() Option {
	return optionFunc(func(c *config) { c.processRoot, c.threadRoot = true, true })
}

// WithFocus keeps only samples with a frame whose name matches re.
func WithFocus(re *regexp.Regexp) Option { return optionFunc(func(c *config) { c.focus = re }) }

// MaxStackDepth is how many ranges and Python frames, outermost first, a
// stack holds: the scopes nested deeper (an NVTX range pushed each step and
// never popped, a recursion) are cut, and what ran in them is summed under
// one CutFrames frame at that depth, so that a profile costs one stack per
// distinct scope at most MaxStackDepth deep, not a copy of every deep one.
const MaxStackDepth = 256

// CutFrames names the frame that stands for the scopes nested deeper than
// MaxStackDepth.
const CutFrames = "(deeper ranges and frames cut)"

// MaxScopeNames is how many distinct range names (with their domain) and
// Python functions get a frame of their own; those seen after them share
// one OtherNames frame, and the profile's comments count them.
const MaxScopeNames = 1 << 16

// OtherNames names the frame of the ranges and Python functions past
// MaxScopeNames.
const OtherNames = "(other names)"
