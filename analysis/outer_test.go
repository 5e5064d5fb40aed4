package analysis_test

import (
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// TestOuterOfRangesAndFrames: a range's and a frame's Outer is the Outer
// of the event that opened it (what a span exporter parents it by), -1 for
// start/end ranges, with and without Forget, on every fixture and random
// trace; and some of them are nested, so the check is not of -1 alone.
func TestOuterOfRangesAndFrames(t *testing.T) {
	nested := 0
	for _, fx := range fixtures(t) {
		tr := fx.build(t)
		for _, forget := range []bool{false, true} {
			opened := map[int]int{} // opening event -> its Event.Outer
			checked := 0
			opts := []analysis.Option{
				analysis.OnEvent(func(e *analysis.Event) {
					switch e.Kind {
					case trace.KindRangePush, trace.KindSpan, trace.KindFrame:
						opened[e.Index] = e.Outer
					}
				}),
				analysis.OnRangeEnd(func(r *analysis.Range) {
					checked++
					want, ok := opened[r.Open]
					if r.Origin == trace.KindRangeStart {
						want, ok = -1, true
					}
					if !ok || r.Outer != want {
						t.Errorf("%s: range opened at %d: Outer %d, its event's %d (seen %v)", fx.name, r.Open, r.Outer, want, ok)
					}
					if r.Outer >= 0 {
						nested++
					}
				}),
				analysis.OnFrameEnd(func(f *analysis.Frame) {
					checked++
					if want, ok := opened[f.Open]; !ok || f.Outer != want {
						t.Errorf("%s: frame at %d: Outer %d, its event's %d (seen %v)", fx.name, f.Open, f.Outer, want, ok)
					}
					if f.Outer >= 0 {
						nested++
					}
				}),
			}
			if forget {
				opts = append(opts, analysis.Forget())
			}
			analysis.Of(tr, opts...)
			if want := len(opened); checked < want {
				t.Errorf("%s: %d ranges and frames ended, %d opened", fx.name, checked, want)
			}
		}
	}
	if nested == 0 {
		t.Error("no range or frame inside another in any fixture")
	}
}
