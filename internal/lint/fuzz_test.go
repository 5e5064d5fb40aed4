package lint

import (
	"bytes"
	"io"
	"iter"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// FuzzRules checks that every rule and both writers survive any trace the
// text reader accepts, and that lint's first pass finds what the rules
// replayed with every baseline known find.
func FuzzRules(f *testing.F) {
	tracetest.AddTextSeeds(f, "testdata/*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		fs := Run(tr)
		replay := func() iter.Seq[*trace.Event] { return analysis.Events(tr) }
		if got, want := findingsJSON(t, fs), findingsJSON(t, runPasses(tr, replay, Rules, true)); got != want {
			t.Fatalf("one pass found\n%s\nthe rules replayed with the baselines known found\n%s", got, want)
		}
		for _, fd := range fs {
			if fd.Rule == "" || fd.Severity < Info || fd.Severity > Error || fd.Count <= 0 {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		if err := WriteText(io.Discard, fs); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(io.Discard, fs); err != nil {
			t.Fatal(err)
		}
	})
}
