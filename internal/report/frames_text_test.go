package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func TestWriteFramesText(t *testing.T) {
	var all, only bytes.Buffer
	r := Build(tracetest.PythonTrace(), Options{})
	if err := WriteText(&all, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteFramesText(&only, r); err != nil {
		t.Fatal(err)
	}
	// The same table as in the whole report, and nothing else.
	i := strings.Index(all.String(), "\nPython wrapper frames")
	if i < 0 || !strings.HasPrefix(all.String()[i:], only.String()) {
		t.Errorf("frames table differs from the report's:\n%s\n--- report:\n%s", only.String(), all.String())
	}
	if !strings.Contains(only.String(), "Device.create_stream") || strings.Contains(only.String(), "CUDA driver API summary") {
		t.Errorf("frames table:\n%s", only.String())
	}

	only.Reset()
	if err := WriteFramesText(&only, Build(&trace.Trace{}, Options{})); err != nil {
		t.Fatal(err)
	}
	if only.String() != "Python wrapper frames: none (the trace has no Python frames)\n" {
		t.Errorf("no frames: %q", only.String())
	}
}
