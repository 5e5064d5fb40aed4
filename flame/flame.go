// Package flame turns a cuprof trace into a pprof profile
// (github.com/google/pprof/profile), so that `go tool pprof`, its web UI and
// every flame graph viewer that reads pprof can show where per-call time goes.
//
// # Stacks
//
// A sample's stack is built from nesting on its thread, outermost first:
//
//   - optionally "[process PID] exe" and "[thread TID] name" roots
//     (WithProcessRoots, WithThreadRoots);
//   - the user ranges open on the thread: NVTX push/pop ranges, cudawrap spans,
//     and NVTX start/end ranges that end on the thread they started on;
//   - the caller of the driver call, symbolized as "libfoo.so:my_alloc" when
//     the trace carries Mappings and Symbols for its process;
//   - the driver call, named by its API base name (cuMemAllocAsync).
//
// NVTX start/end ranges that end on another thread cover no one thread's
// time: they are left out of the stacks and counted in the profile's comments.
// Ranges that are not properly nested (a span still open when the push range
// around it pops) are closed at the enclosing range's end and reported as
// warnings; a pop with nothing open, or the end of an unknown range ID, is a
// warning and is otherwise ignored. Ranges still open at the end of the trace
// end at the last event of their thread, with a warning.
//
// # Views
//
// ViewAPI has sample types calls/count and time/nanoseconds. time is self
// time: a driver call's duration, less the capture's calibrated cost per call
// (trace.Meta.Overhead.InsideNs, clamped at 0; the profile's comments say how
// much), and a range's duration less the raw durations of the ranges and calls
// directly inside it, so that a wrapper's host overhead is a wide bar and
// pprof's cumulative time is the inclusive time. calls counts driver calls only.
//
// ViewMemory has alloc_objects/count, alloc_space/bytes, inuse_objects/count
// and inuse_space/bytes (objects still allocated at the end of the trace), keyed
// by the allocation site: the stack at the successful allocating call.
//
// ViewLifetime has objects/count and lifetime/nanoseconds for every object a
// successful call created (streams, events, allocations, pools, contexts,
// modules), keyed by creation site; objects never destroyed live until the end
// of the trace and carry the label state=live.
//
// # Labels
//
// Samples carry low-cardinality string labels only: api, category, device,
// result (only when not CUDA_SUCCESS), thread (its name), object (lifetime
// view) and state; and the numeric label bytes (unit bytes) on allocations and
// copies, so that `pprof -tagfocus=bytes=1mb:` works. Handles and IDs are never
// labels.
//
// # Cost
//
// Build walks the events once. Samples are aggregated by stack and label values
// as they are found, and functions and locations are deduplicated by value, so
// memory grows with the distinct stacks (and, in the memory and lifetime views,
// with the objects alive at one time), not with the number of events.
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
