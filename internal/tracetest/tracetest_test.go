package tracetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func TestReadText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.txt")
	text := "cuprof-text 1\ncall 1/1 t=10 end=20 api=cuCtxGetCurrent\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := ReadText(t, path)
	if len(tr.Events) != 1 || tr.Events[0].API != trace.APICtxGetCurrent || tr.Events[0].End != 20 {
		t.Errorf("read %+v", tr.Events)
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(path, []byte("cuprof-text 1\nmark 1/1 t=5 name=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tr := ReadFile(t, path); len(tr.Events) != 1 || tr.Events[0].Kind != trace.KindMark {
		t.Errorf("read %+v", tr.Events)
	}
}
