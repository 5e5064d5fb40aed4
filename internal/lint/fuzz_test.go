package lint

import (
	"bytes"
	"io"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// FuzzRules checks that every rule and both writers survive any trace the
// text reader accepts.
func FuzzRules(f *testing.F) {
	tracetest.AddTextSeeds(f, "testdata/*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		fs := Run(tr)
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
