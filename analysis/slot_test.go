package analysis_test

import (
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// TestSlot sets each opening event's index (plus one) as its slot and
// checks that every range and frame ends with its own opener's, over every
// fixture and random trace, with and without Forget (whose rows are
// reused), and that events opening nothing take no slot.
func TestSlot(t *testing.T) {
	ranges, frames := 0, 0
	for _, fx := range fixtures(t) {
		for _, forget := range []bool{false, true} {
			tr := fx.build(t)
			opts := []analysis.Option{
				analysis.OnEvent(func(e *analysis.Event) {
					ok := e.SetSlot(uint64(e.Index) + 1)
					opens := e.Kind == trace.KindFrame || e.Opened() >= 0
					if ok != opens {
						t.Errorf("%s: event %d (%s): SetSlot = %v, want %v", fx.name, e.Index, e.Kind, ok, opens)
					}
				}),
				analysis.OnRangeEnd(func(r *analysis.Range) {
					ranges++
					if r.Slot != uint64(r.Open)+1 {
						t.Errorf("%s: range opened by event %d ends with slot %d", fx.name, r.Open, r.Slot)
					}
				}),
				analysis.OnFrameEnd(func(f *analysis.Frame) {
					frames++
					if f.Slot != uint64(f.Open)+1 {
						t.Errorf("%s: frame of event %d ends with slot %d", fx.name, f.Open, f.Slot)
					}
				}),
			}
			if forget {
				opts = append(opts, analysis.Forget())
			}
			analysis.Of(tr, opts...)
			if t.Failed() {
				t.Fatalf("%s (forget %v)", strings.TrimPrefix(fx.name, "../"), forget)
			}
		}
	}
	if ranges == 0 || frames == 0 {
		t.Fatalf("%d ranges and %d frames ended: the fixtures exercised nothing", ranges, frames)
	}
}
