package lint

import (
	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Live names, as a recording goes by, each occurrence of the patterns
// whose one occurrence is decided by one event or one object's end, with
// the rules' own tests: a stream or event created and destroyed within
// analysis.ChurnWindow (stream-churn, event-churn: the churn rule's
// test before its per-site minimum), and a cuCtxSetCurrent of the context
// already current on the thread (redundant-set-current's "set" pattern).
// A finding needs several occurrences at one site and, for pool-trim and
// sync-idle, baselines measured on the whole trace; Live counts
// occurrences, for a live counter an alert can fire on, and cuprof lint
// of the trace file gives the findings. It keeps nothing.
type Live struct{}

// Event returns the rule ID an event is an occurrence of, "" when none.
func (Live) Event(e *analysis.Event) string {
	if e.Kind == trace.KindCall && e.Result.OK() && e.API == trace.APICtxSetCurrent &&
		e.Handle != 0 && e.Handle == e.Context {
		return redundantSetCurrent{}.ID()
	}
	return ""
}

// ObjectEnd returns the rule ID an object's end is an occurrence of, ""
// when none.
func (Live) ObjectEnd(o *analysis.Object) string {
	for _, c := range [...]churn{streamChurn, eventChurn} {
		if o.Kind == c.kind && o.Churn(analysis.ChurnWindow) {
			return c.id
		}
	}
	return ""
}

// LiveRules are the rule IDs Live names.
func LiveRules() []string {
	return []string{redundantSetCurrent{}.ID(), streamChurn.id, eventChurn.id}
}
