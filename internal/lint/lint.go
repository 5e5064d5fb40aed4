// Package lint finds the costly CUDA host-code patterns a lifecycle trace
// shows: pools trimmed at every synchronize, streams and events created per
// call, redundant context switches, synchronizes in hot loops or on idle
// streams, leaks, repeated errors, allocation churn, graphs instantiated per
// step, queries whose answer could be kept, virtual memory mapped and
// unmapped again and again, and cuCtxGetDevice storms. Each Finding carries
// its evidence (count, estimated cost, where, an example call) and the fix.
//
// Costs are estimates from the trace's own call times, with the profiler's
// calibrated in-call cost subtracted (as cuprof report does). Each rule's file
// documents its thresholds and how it estimates cost; in short:
//
//	rule (severity)                  fires on
//	pool-trim (error)                a synchronize or cuStreamDestroy after frees into a pool with
//	                                 release threshold 0, taking > 10x its baseline and >= 5 us more
//	                                 (baseline: the trace's median idle synchronize, 1 us when none;
//	                                 the median destroy that trims nothing); cost: the excess, plus
//	                                 the excess of the allocation that re-grows the pool
//	stream-churn, event-churn (warn) >= 3 objects created and destroyed within 1 ms at one site
//	alloc-churn (warning)            >= 3 same-size cuMemAlloc re-made after cuMemFree at one site
//	redundant-set-current (info)     >= 2 cuCtxSetCurrent of the current context, or push/pop pairs
//	                                 that push the current context or enclose no call, at one site
//	sync-in-loop (warning)           >= 10 synchronizes at one site, median gap <= 1 ms, median
//	                                 duration >= 5 idle synchronizes (trimming ones left out)
//	sync-idle (warning)              >= 3 synchronizes at one site with no async work since the
//	                                 previous synchronize
//	error-check (warning, info)      >= 3 failures of one API with one result at one site;
//	                                 >= 10 error-name lookups at one site
//	leak (warning)                   streams, events, allocations, pools, created contexts never
//	                                 destroyed (alive at exit or reclaimed with their context)
//	wrapper-overhead (warning)       a Python frame with driver calls under it, run >= 3 times, whose
//	                                 own time per call (self, plus frames under it that make no driver
//	                                 call) exceeds the driver time per call under it
//	graph-reinstantiate (warning)    >= 3 graph execs instantiated at one site, launched <= 2 times each
//	                                 (median)
//	cached-query (info)              >= 10 capture checks, occupancy or attribute queries at one site
//	                                 repeating an earlier call's arguments and capture state, at least
//	                                 half of its calls
//	vmm-churn (warning)              >= 3 mappings unmapped and mapped again at the same address at one
//	                                 site
//	get-device-storm (info)          >= 100 cuCtxGetDevice at one site on a thread whose context did not
//	                                 change since it last asked
//
// A site is (process, caller address, enclosing range path, Python stack).
// What a trace means (devices, context stacks, object lifetimes, range
// paths, Python stacks, call costs, which results are errors) comes from
// package analysis, as it does for cuprof report. The rules run on the
// trace as it is replayed (Check), so a trace of any length is linted in
// memory that grows with its objects alive and its sites, not its events.
package lint

import (
	"fmt"
	"iter"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Severity ranks findings.
type Severity uint8

const (
	// Info: worth knowing, rarely the bottleneck.
	Info Severity = 1 + iota
	// Warning: costs time on every occurrence; fix when it repeats.
	Warning
	// Error: a pattern known to cost orders of magnitude (e.g. pool trimming).
	Error
)

var severityNames = [...]string{Info: "info", Warning: "warning", Error: "error"}

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	if s >= Info && s <= Error {
		return severityNames[s]
	}
	return "unknown"
}

// ParseSeverity accepts "info", "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	for v := Info; v <= Error; v++ {
		if severityNames[v] == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q; use info, warning or error", s)
}

// MarshalText makes severities JSON strings.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err == nil {
		*s = v
	}
	return err
}

// Where says where in the program a finding happens: the site of its first
// occurrence.
type Where struct {
	// Range is the path of enclosing NVTX ranges / spans, outermost first,
	// joined by "/"; "" when none.
	Range string `json:"range"`
	// Python is the Python stack around the call, outermost first, joined
	// by " > "; absent when the trace has no Python frames there.
	Python string `json:"python,omitempty"`
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	Thread string `json:"thread"`
	// Rank and Host say which rank of its job, on which host, the process
	// was (analysis.IdentityOf); Rank is absent when no launcher gave one,
	// Host when the trace does not say.
	Rank *int   `json:"rank,omitempty"`
	Host string `json:"host,omitempty"`
	// Caller is the return address of the driver call ("0x401020"), "" when
	// not recorded; Function names it (analysis.CallSite.Name: its symbol,
	// else its file and offset in it, else the address).
	Caller   string `json:"caller"`
	Function string `json:"function"`
	// Object is the name the program gave the object the first occurrence
	// names (an NVTX cuStream name: analysis.Analysis.ObjectName); absent
	// when it named none.
	Object string `json:"object,omitempty"`
	// Stack is the Python stack as frames, outermost first, with their
	// source files and first lines where the trace has them; absent like
	// Python.
	Stack []Frame `json:"stack,omitempty"`
}

// Frame is one Python frame of a finding's site.
type Frame struct {
	Name   string `json:"name"`
	Module string `json:"module,omitempty"`
	File   string `json:"file,omitempty"` // "" for C callables
	Line   uint32 `json:"line,omitempty"` // the function's first line; 0 when unknown
}

// Example is one call that shows the finding.
type Example struct {
	Event      int    `json:"event"`     // index into the trace's events
	TimeNs     int64  `json:"time_ns"`   // its start on the trace clock
	OffsetNs   int64  `json:"offset_ns"` // its start after the trace's first event
	API        string `json:"api"`
	DurationNs int64  `json:"duration_ns"`
}

// Finding is one problem found in a trace.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Count    int      `json:"count"`   // how many times it happened
	CostNs   int64    `json:"cost_ns"` // estimated time it cost the program
	Where    Where    `json:"where"`
	Example  Example  `json:"example"`
	Fix      string   `json:"fix"`
}

// Rules is every rule cuprof lint runs, in documentation order.
var Rules = []Rule{
	poolTrim{},
	streamChurn,
	eventChurn,
	allocChurn{},
	redundantSetCurrent{},
	syncInLoop{},
	syncIdle{},
	errorCheck{},
	leak{},
	wrapperOverhead{},
	graphReinstantiate{},
	cachedQuery{},
	vmmChurn{},
	getDeviceStorm{},
}

// Run runs every rule on t and returns the findings, most severe and most
// costly first. It does not modify t.
func Run(t *trace.Trace) []Finding {
	return Stream(t, func() iter.Seq[*trace.Event] { return analysis.Events(t) })
}

// Stream is Run over a trace read as a stream: tables holds its tables
// (Meta, Strings, Processes, Threads, Symbols, Code; its Events are not
// read) and replay returns its events in trace order from the first, each
// time it is called. lint replays the trace once, or three times when a
// call trimmed a pool (see pass), keeping sums per object alive, site, pool and stream, so its
// memory does not grow with the number of events.
func Stream(tables *trace.Trace, replay func() iter.Seq[*trace.Event]) []Finding {
	return run(tables, replay, Rules)
}

// sortFindings orders findings by severity (highest first), cost (highest first),
// rule and message.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.CostNs != b.CostNs {
			return a.CostNs > b.CostNs
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.Message < b.Message
	})
}

// AtLeast reports whether any finding has severity s or higher.
func AtLeast(fs []Finding, s Severity) bool {
	for i := range fs {
		if fs[i].Severity >= s {
			return true
		}
	}
	return false
}

// plural returns "1 stream", "3 streams", "2 synchronizes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "s") || strings.HasSuffix(noun, "sh") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
