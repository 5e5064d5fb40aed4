package analysis

import (
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// TestOpened: every push, span and accepted start event names the range
// OnRangeEnd later hands out for it (the same Open), a start of an id
// already open names none, and no other event names one; with and without
// Forget, on random traces and one with a duplicate start.
func TestOpened(t *testing.T) {
	dup := &trace.Trace{Strings: []string{"", "r"}, Processes: []trace.Process{{PID: 1}}}
	dup.Events = []trace.Event{
		{Kind: trace.KindRangeStart, PID: 1, TID: 1, Start: 10, End: 10, ID: 7, Name: 1},
		{Kind: trace.KindRangeStart, PID: 1, TID: 1, Start: 20, End: 20, ID: 7, Name: 1}, // refused
		{Kind: trace.KindRangeEnd, PID: 1, TID: 1, Start: 30, End: 30, ID: 7},
	}
	traces := map[string]*trace.Trace{"duplicate start": dup, "python": tracetest.PythonTrace()}
	for seed := uint64(1); seed <= 4; seed++ {
		traces["random"+string(rune('0'+seed))] = tracetest.Random(seed, 3000)
	}
	for name, tr := range traces {
		for _, forget := range []bool{false, true} {
			opened := map[int]bool{} // opening event -> its range not ended yet
			var refused, openers, ended int
			opts := []Option{OnEvent(func(e *Event) {
				r := e.Opened()
				switch e.Kind {
				case trace.KindRangePush, trace.KindSpan, trace.KindRangeStart:
					if r < 0 {
						refused++
						return
					}
					rg := &e.Analysis().Ranges[r]
					if rg.Open != e.Index || rg.Origin != e.Kind {
						t.Errorf("%s: event %d (%v) names range %d opened by %d (%v)", name, e.Index, e.Kind, r, rg.Open, rg.Origin)
					}
					opened[e.Index] = true
					openers++
				default:
					if r != -1 {
						t.Errorf("%s: event %d (%v) names range %d", name, e.Index, e.Kind, r)
					}
				}
			}), OnRangeEnd(func(r *Range) {
				if !opened[r.Open] {
					t.Errorf("%s: range opened by %d ended, its opener named none", name, r.Open)
				}
				delete(opened, r.Open)
				ended++
			})}
			if forget {
				opts = append(opts, Forget())
			}
			Of(tr, opts...)
			if len(opened) != 0 || ended != openers {
				t.Errorf("%s (forget %v): %d ranges named at their opening, %d ended", name, forget, openers, ended)
			}
			if name == "duplicate start" && (refused != 1 || openers != 1) {
				t.Errorf("duplicate start: %d refused, %d opened; want 1 and 1", refused, openers)
			}
			if name != "duplicate start" && openers == 0 {
				t.Errorf("%s: no range opened", name)
			}
		}
	}
}
