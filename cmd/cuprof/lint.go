package main

import (
	"fmt"
	"io"
	"iter"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/trace"
)

type lintOptions struct {
	format string
	failOn string
	output string
}

// defaultFailOn is the severity lint exits 1 at without --fail-on: errors,
// as eslint does (warnings and info are reported, and pass).
const defaultFailOn = "error"

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

lint exits with status 1 when a finding of severity error exists (eslint's
rule; ruff and golangci-lint fail on any finding), 0 otherwise: --fail-on
warning or info is stricter, --fail-on never only reports. --format sarif
writes a SARIF 2.1.0 log (GitHub code scanning, other CI viewers), --format
csv one table with a row per finding. TRACE "-" reads standard input.

Rules:
` + ruleList(),
		Example: `  cuprof lint run.cuprof
  cuprof lint run.cuprof --format json
  cuprof lint run.cuprof --fail-on warning
  cuprof lint run.cuprof --format sarif -o cuprof.sarif --fail-on never`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text, json, sarif or csv")
	f.StringVar(&o.failOn, "fail-on", defaultFailOn, "exit with status 1 when a finding of this severity or higher exists: info, warning, error or never")
	f.StringVarP(&o.output, "output", "o", "", "write the findings to this file instead of standard output")
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
	sarif := func(w io.Writer, fs []lint.Finding) error {
		return lint.WriteSARIF(w, fs, lint.SARIFOptions{Trace: path, Version: version})
	}
	write, err := formatWriter(o.format, format[[]lint.Finding]{"text", lint.WriteText},
		format[[]lint.Finding]{"json", lint.WriteJSON}, format[[]lint.Finding]{"sarif", sarif},
		format[[]lint.Finding]{"csv", lint.WriteCSV})
	if err != nil {
		return err
	}
	var failOn lint.Severity // 0: never
	if o.failOn != "never" {
		s, err := lint.ParseSeverity(o.failOn)
		if err != nil {
			return usageErrorf("bad --fail-on: %w (or never)", err)
		}
		failOn = s
	}
	out := o.output
	if out == "" {
		out = "-"
	}
	if err := checkOutput(g, out, path); err != nil {
		return err
	}
	// the trace is read as a stream, replayed by lint once (three times
	// when a call trimmed a pool):
	// its memory does not grow with the trace's length
	f, err := openTrace(g, path, warnAll)
	if err != nil {
		return err
	}
	defer f.Close()
	var readErr error
	pr := newReadProgress(g, "lint", f.NumEvents(), true, false)
	defer pr.done()
	fs := lint.Stream(f.Tables(), func() iter.Seq[*trace.Event] {
		rd := f.NewEventReader()
		return func(yield func(*trace.Event) bool) {
			for e := range pr.wrap(rd.All()) {
				if !yield(e) {
					return
				}
			}
			if err := rd.Err(); err != nil && readErr == nil {
				readErr = err
			}
		}
	})
	pr.done()
	if readErr != nil {
		return traceError(path, readErr)
	}
	if out == "-" {
		if err := write(g.stdout, fs); err != nil {
			return fmt.Errorf("cannot write the findings: %w", err)
		}
	} else if err := writeOutput(g, out, func(w io.Writer) error { return write(w, fs) }); err != nil {
		return err
	}
	if failOn != 0 && lint.AtLeast(fs, failOn) {
		return &exitError{code: 1}
	}
	return nil
}
