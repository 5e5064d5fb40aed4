package analysis

import "github.com/cuprof/cuprof/trace"

// Opened returns the index in Analysis.Ranges of the range the event
// opened: the push/pop range or cudawrap span of a push or span event, the
// start/end range of a start event; -1 for any other event, and for a start
// the replay refused (its id was already open: a RangeProblem). A consumer
// drawing start/end ranges learns at their start which ones OnRangeEnd will
// hand it. It is valid only during the event's callbacks (with Forget, the
// row is reused once the range ended).
func (e *Event) Opened() int32 {
	if e.tr == nil {
		return -1
	}
	tr := e.tr
	switch e.Kind {
	case trace.KindRangePush, trace.KindSpan:
		th := tr.thread(e.PID, e.TID)
		if n := len(th.scopes); n > 0 && th.scopes[n-1].event == e.Index {
			return th.scopes[n-1].rng
		}
	case trace.KindRangeStart:
		if r, ok := tr.started[rangeKey{e.PID, e.ID}]; ok && tr.a.Ranges[r].Open == e.Index {
			return r
		}
	}
	return -1
}
