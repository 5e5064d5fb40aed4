package main

import (
	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/record"
)

// pythonOptions are record's flags for Python frames (docs/python.md).
type pythonOptions struct {
	mode      string
	scope     string
	threshold int
}

func pythonFlags(cmd *cobra.Command, o *pythonOptions) {
	cmd.Flags().StringVar(&o.mode, "python", record.PythonFull,
		"Python frames: full (functions and the C callables Python calls), stacks (only the Python functions on each driver call's stack, cheaper) or off")
	cmd.Flags().StringVar(&o.scope, "python-scope", record.ScopeCUDA,
		"which Python frames: cuda (those leading to driver calls and their direct callees) or all")
	cmd.Flags().IntVar(&o.threshold, "python-threshold", record.DefaultPythonThreshold,
		"with --python-scope cuda: calls of a function (or C calls of one call site) with no driver call inside after which it is no longer traced")
}

func (o *pythonOptions) options() []record.Option {
	return []record.Option{record.WithPython(o.mode), record.WithPythonScope(o.scope, o.threshold)}
}
