package report

import (
	"fmt"
	"io"

	"github.com/cuprof/cuprof/internal/table"
)

// errWriter remembers the first write error so printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) table(t *table.Table) {
	if e.err == nil {
		e.err = t.Write(e.w)
	}
}
