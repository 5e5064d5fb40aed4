package otlp

import (
	"testing"

	"github.com/cuprof/cuprof/internal/lifecycle"
	"github.com/cuprof/cuprof/trace"
)

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lifecycle.AttributeDevices(tr)
	return tr
}
