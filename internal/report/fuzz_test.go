package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// FuzzBuild checks that any trace the text reader accepts can be reported in
// every format without panicking.
func FuzzBuild(f *testing.F) {
	for _, name := range fixtures {
		data, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		r := Build(tr, Options{})
		for _, w := range []func(io.Writer, *Report) error{WriteText, WriteJSON, WriteCSV} {
			if err := w(io.Discard, r); err != nil {
				t.Fatal(err)
			}
		}
	})
}
