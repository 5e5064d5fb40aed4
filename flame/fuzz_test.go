package flame

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// FuzzBuild feeds text traces through Build in every view: whatever the
// trace says, Build must not panic and must return a valid profile.
func FuzzBuild(f *testing.F) {
	fixtures, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range fixtures {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, opts := range [][]Option{nil, {WithView(ViewMemory)}, {WithView(ViewLifetime), WithThreadRoots()}} {
			p, _, err := Build(tr, opts...)
			if err != nil {
				continue
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("invalid profile: %v", err)
			}
			var buf bytes.Buffer
			if err := WriteText(&buf, p); err != nil {
				t.Fatal(err)
			}
		}
	})
}
