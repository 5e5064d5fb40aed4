package otlp

import (
	"testing"

	"github.com/cuprof/cuprof/internal/lifecycle"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	tr := tracetest.ReadFile(t, "testdata/"+name)
	lifecycle.AttributeDevices(tr)
	return tr
}
