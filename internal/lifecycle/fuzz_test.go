package lifecycle

import (
	"bytes"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// FuzzAnalyze runs every analysis of the package on any trace the text
// reader accepts and checks the invariants the exporters rely on.
func FuzzAnalyze(f *testing.F) {
	tracetest.AddTextSeeds(f, "testdata/*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		AttributeDevices(tr)
		a := Analyze(tr)
		for i := range a.Objects {
			o := &a.Objects[i]
			if o.Create < 0 || o.Create >= len(tr.Events) || o.Destroy >= len(tr.Events) {
				t.Fatalf("object %d: event indexes out of range: %+v", i, o)
			}
			if (o.Destroy >= 0) != (o.Reason == EndDestroyed) {
				t.Fatalf("object %d: destroy %d with reason %s", i, o.Destroy, o.Reason)
			}
			if o.Lifetime() < 0 {
				t.Fatalf("negative lifetime: %+v", o)
			}
		}
		for _, p := range a.Problems {
			if p.Event < 0 || p.Event >= len(tr.Events) {
				t.Fatalf("problem out of range: %+v", p)
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
		en := NewEnclosing(tr)
		for i := range tr.Events {
			en.Path(i)
		}
	})
}
