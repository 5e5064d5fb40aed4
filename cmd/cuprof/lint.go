package main

import (
	"fmt"
	"iter"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/trace"
)

type lintOptions struct {
	format string
	failOn string
}

func newLintCmd(g *globalOptions) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint TRACE",
		Short: "Find costly CUDA object-lifecycle patterns in a trace, with cost and fix",
		Long: `lint looks for the patterns that cost CUDA host code the most: pools trimmed at
every synchronize (release threshold 0), streams, events and allocations made
and destroyed per call, redundant context switches, synchronizes in hot loops
or waiting on nothing, repeated errors and error-name lookups, and objects never
destroyed. Each finding gives its rule, severity, count, the time it cost
(estimated from the trace), where it happens (range, thread, caller), an example
call and the fix.

With --fail-on SEVERITY, lint exits with status 1 when a finding of that
severity or higher exists (for CI). TRACE "-" reads standard input.

Rules:
` + ruleList(),
		Example: `  cuprof lint run.cuprof
  cuprof lint run.cuprof --format json
  cuprof lint run.cuprof --fail-on warning`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text or json")
	f.StringVar(&o.failOn, "fail-on", "", "exit with status 1 when a finding of this severity or higher exists: info, warning or error")
	return cmd
}

func ruleList() string {
	s := ""
	for _, r := range lint.Rules {
		s += fmt.Sprintf("  %-22s %s\n", r.ID(), r.Doc())
	}
	return s
}

func runLint(g *globalOptions, o *lintOptions, path string) error {
	write, err := formatWriter(o.format, format[[]lint.Finding]{"text", lint.WriteText},
		format[[]lint.Finding]{"json", lint.WriteJSON})
	if err != nil {
		return err
	}
	var failOn lint.Severity
	if o.failOn != "" {
		s, err := lint.ParseSeverity(o.failOn)
		if err != nil {
			return usageErrorf("bad --fail-on: %w", err)
		}
		failOn = s
	}
	// the trace is read as a stream, replayed by lint two or three times:
	// its memory does not grow with the trace's length
	f, err := openTrace(g, path, warnAll)
	if err != nil {
		return err
	}
	defer f.Close()
	var readErr error
	fs := lint.Stream(f.Tables(), func() iter.Seq[*trace.Event] {
		rd := f.NewEventReader()
		return func(yield func(*trace.Event) bool) {
			for e := range rd.All() {
				if !yield(e) {
					return
				}
			}
			if err := rd.Err(); err != nil && readErr == nil {
				readErr = err
			}
		}
	})
	if readErr != nil {
		return traceError(path, readErr)
	}
	if err := write(g.stdout, fs); err != nil {
		return fmt.Errorf("cannot write the findings: %w", err)
	}
	if failOn != 0 && lint.AtLeast(fs, failOn) {
		return &exitError{code: 1}
	}
	return nil
}
