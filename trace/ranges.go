package trace

import "fmt"

// Range is a user range resolved from the events that delimit it: an NVTX
// push/pop pair, an NVTX start/end pair, or a cudawrap span. Package
// analysis pairs and nests the range events of a trace and gives each Range
// (analysis.Range embeds it); this package only defines it.
type Range struct {
	PID    uint32
	TID    uint32 // the thread it began on
	Start  int64
	End    int64
	Name   StringID
	Domain StringID
	// Depth is the nesting depth among push/pop ranges and spans of its thread
	// (0 for outermost); start/end ranges have Depth -1: they do not nest.
	Depth int
	// Unterminated is set when the range was never closed; End is then the
	// last time seen in its process.
	Unterminated bool
	Origin       Kind   // KindRangePush, KindRangeStart or KindSpan
	ID           uint64 // start/end ranges: the NVTX range ID
}

// RangeProblem reports a range event that could not be paired (see
// analysis.Analysis.RangeProblems).
type RangeProblem struct {
	Event  int // index into Trace.Events
	Reason string
}

func (p RangeProblem) String() string { return fmt.Sprintf("event %d: %s", p.Event, p.Reason) }
