package otlp

import (
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	return tracetest.ReadFile(t, "testdata/"+name)
}
