package trace

import "fmt"

// Range is a user range resolved from the events that delimit it: an NVTX
// push/pop pair, an NVTX start/end pair, or a cudawrap span.
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

// RangeProblem reports an event that could not be paired.
type RangeProblem struct {
	Event  int // index into Trace.Events
	Reason string
}

func (p RangeProblem) String() string { return fmt.Sprintf("event %d: %s", p.Event, p.Reason) }

type threadKey struct{ pid, tid uint32 }

// Ranges pairs range openings with their closings. Push ranges and spans are
// returned with their nesting depth per thread; a pop with nothing open and an
// end with an unknown ID are returned as problems, not errors; ranges left open
// end at their process's last event and are marked Unterminated. The result is
// ordered by Start. Events must be in SortEvents order.
func (t *Trace) Ranges() ([]Range, []RangeProblem) {
	var out []Range
	var problems []RangeProblem
	open := map[threadKey][]int{}        // indexes into out of open push ranges
	started := map[uint64]int{}          // start/end ranges by (pid<<40 ^ id) key
	lastSeen := map[uint32]int64{}       // per process
	spanStack := map[threadKey][]int64{} // ends of enclosing spans, for depth
	key := func(pid uint32, id uint64) uint64 { return uint64(pid)<<40 ^ id }
	for i := range t.Events {
		e := &t.Events[i]
		if e.End > lastSeen[e.PID] {
			lastSeen[e.PID] = e.End
		}
		if e.Start > lastSeen[e.PID] {
			lastSeen[e.PID] = e.Start
		}
		k := threadKey{e.PID, e.TID}
		// spans and push ranges share one depth counter per thread
		ss := spanStack[k]
		for len(ss) > 0 && ss[len(ss)-1] <= e.Start && e.Kind != KindRangePop {
			ss = ss[:len(ss)-1]
		}
		spanStack[k] = ss
		depth := len(open[k]) + len(ss)
		switch e.Kind {
		case KindRangePush:
			out = append(out, Range{PID: e.PID, TID: e.TID, Start: e.Start, End: -1, Name: e.Name,
				Domain: e.Domain, Depth: depth, Origin: KindRangePush})
			open[k] = append(open[k], len(out)-1)
		case KindRangePop:
			st := open[k]
			if len(st) == 0 {
				problems = append(problems, RangeProblem{i, "pop with no open range on its thread"})
				continue
			}
			out[st[len(st)-1]].End = e.Start
			open[k] = st[:len(st)-1]
		case KindSpan:
			out = append(out, Range{PID: e.PID, TID: e.TID, Start: e.Start, End: e.End, Name: e.Name,
				Domain: e.Domain, Depth: depth, Origin: KindSpan})
			spanStack[k] = append(ss, e.End)
		case KindRangeStart:
			kk := key(e.PID, e.ID)
			if _, dup := started[kk]; dup {
				problems = append(problems, RangeProblem{i, fmt.Sprintf("range id %d started twice", e.ID)})
				continue
			}
			out = append(out, Range{PID: e.PID, TID: e.TID, Start: e.Start, End: -1, Name: e.Name,
				Domain: e.Domain, Depth: -1, Origin: KindRangeStart, ID: e.ID})
			started[kk] = len(out) - 1
		case KindRangeEnd:
			kk := key(e.PID, e.ID)
			j, ok := started[kk]
			if !ok {
				problems = append(problems, RangeProblem{i, fmt.Sprintf("end of unknown range id %d", e.ID)})
				continue
			}
			out[j].End = e.Start
			delete(started, kk)
		}
	}
	for i := range out {
		if out[i].End < 0 {
			out[i].End = lastSeen[out[i].PID]
			out[i].Unterminated = true
		}
	}
	return out, problems
}
