package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/record"
)

// pythonOptions are record's flags for Python frames (docs/python.md).
type pythonOptions struct {
	mode      string
	scope     string
	threshold int
	helperMin time.Duration
}

func pythonFlags(cmd *cobra.Command, o *pythonOptions) {
	cmd.Flags().StringVar(&o.mode, "python", record.PythonFull,
		"Python frames: full (functions and the C callables Python calls), stacks (only the Python functions on each driver call's stack, cheaper) or off")
	cmd.Flags().StringVar(&o.scope, "python-scope", record.ScopeCUDA,
		"which Python frames: cuda (those leading to driver calls and their direct callees) or all")
	cmd.Flags().IntVar(&o.threshold, "python-threshold", record.DefaultPythonThreshold,
		"with --python-scope cuda: calls of a function (or C calls of one call site) with no driver call inside after which it is no longer traced")
	cmd.Flags().DurationVar(&o.helperMin, "python-helper-min", record.DefaultPythonHelperMin,
		"with --python=full: a wrapper's helper (a callee of code leading to CUDA, with no driver call under it) whose median time per call is under this is no longer written after --python-threshold calls (0: always written)")
}

func (o *pythonOptions) options() []record.Option {
	helperMin := o.helperMin
	if helperMin == 0 {
		helperMin = -1 // every helper written
	}
	return []record.Option{record.WithPython(o.mode), record.WithPythonScope(o.scope, o.threshold),
		record.WithPythonHelperMin(helperMin)}
}
