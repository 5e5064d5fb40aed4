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

// SetSlot stores v, a consumer's own value, with the range or frame
// activation the event opened (a push, span, start or frame event), to be
// handed back as Range.Slot at OnRangeEnd or Frame.Slot at OnFrameEnd: what
// a consumer would otherwise keep in a map from opening event to its state
// until the end. It reports whether the event opened one (false for any
// other event, and for a start the replay refused). Call it during the
// event's OnEvent callback. One replay has one slot per activation: a
// replay feeding several consumers gives it to one of them.
func (e *Event) SetSlot(v uint64) bool {
	if e.tr == nil {
		return false
	}
	tr := e.tr
	switch e.Kind {
	case trace.KindFrame:
		th := tr.thread(e.PID, e.TID)
		if n := len(th.scopes); n > 0 && th.scopes[n-1].event == e.Index && th.scopes[n-1].kind == scopeFrame {
			th.scopes[n-1].slot = v
			return true
		}
		return false
	}
	r := e.Opened()
	if r < 0 {
		return false
	}
	tr.a.Ranges[r].Slot = v
	return true
}
