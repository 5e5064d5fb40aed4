package analysis

import (
	"bytes"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// FuzzAnalyze replays any trace the text reader accepts and checks the
// invariants consumers rely on.
func FuzzAnalyze(f *testing.F) {
	tracetest.AddTextSeeds(f, "testdata/*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		before := append([]trace.Event(nil), tr.Events...)
		n := 0
		a := Of(tr, OnEvent(func(e *Event) {
			if e.Index != n {
				t.Fatalf("event %d resolved as %d", n, e.Index)
			}
			n++
			if e.Range >= int32(len(a0(e).Ranges)) || (e.Range < 0) != (e.Path == noPath) {
				t.Fatalf("event %d: range %d path %d", e.Index, e.Range, e.Path)
			}
			if e.Object != NoObject && int(e.Object) >= len(a0(e).Objects) {
				t.Fatalf("event %d: object %d out of range", e.Index, e.Object)
			}
			if e.Duration < 0 {
				t.Fatalf("event %d: negative duration", e.Index)
			}
		}))
		for i := range tr.Events {
			if tr.Events[i] != before[i] {
				t.Fatalf("event %d modified", i)
			}
		}
		for i := range a.Objects {
			o := &a.Objects[i]
			if o.Create < 0 || o.Create >= len(tr.Events) || o.Destroy >= len(tr.Events) || o.Ender >= len(tr.Events) {
				t.Fatalf("object %d: event indexes out of range: %+v", i, o)
			}
			if (o.Destroy >= 0) != (o.Reason == EndDestroyed) || (o.Ender >= 0) != (o.Reason != EndAlive) {
				t.Fatalf("object %d: destroy %d ender %d with reason %s", i, o.Destroy, o.Ender, o.Reason)
			}
			if o.Lifetime() < 0 {
				t.Fatalf("negative lifetime: %+v", o)
			}
		}
		for i, r := range a.Ranges {
			if r.Parent >= int32(i) || (r.Parent >= 0 && a.Ranges[r.Parent].Path != a.pathParent(r.Path)) {
				t.Fatalf("range %d: parent %d, path %d", i, r.Parent, r.Path)
			}
			if r.InclusiveNs < 0 || r.SelfNs < 0 || r.SelfNs > r.InclusiveNs {
				t.Fatalf("range %d: times %+v", i, r.Times)
			}
			a.PathString(r.Path)
		}
		for f := FrameID(1); int(f) < a.Stacks(); f++ {
			s := a.FrameStats(f)
			if s.SelfNs < 0 || s.SelfNs > s.InclusiveNs {
				t.Fatalf("stack %d: %+v", f, s)
			}
		}
		for _, c := range a.BytesInUse() {
			for j := 1; j < len(c.Samples); j++ {
				if c.Samples[j].T <= c.Samples[j-1].T {
					t.Fatalf("samples out of order: %+v", c.Samples)
				}
			}
		}
		a.Summary()
		a.ByCode()
	})
}

// a0 is the analysis an event belongs to, as far as it is built.
func a0(e *Event) *Analysis { return e.tr.a }
