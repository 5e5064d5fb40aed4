package lint

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// FuzzRules checks that every rule and both writers survive any trace the
// text reader accepts.
func FuzzRules(f *testing.F) {
	names, _ := filepath.Glob("testdata/*.txt")
	for _, n := range names {
		if filepath.Ext(n[:len(n)-4]) == ".golden" {
			continue
		}
		data, err := os.ReadFile(n)
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
