package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

type dumpOptions struct {
	output string // -o: file to write; stdout when empty
	binary bool   // --binary: write the binary form
}

func newDumpCmd(g *globalOptions) *cobra.Command {
	o := &dumpOptions{}
	cmd := &cobra.Command{
		Use:   "dump TRACE...",
		Short: "Print a trace as text, or convert text to a binary .cuprof file",
		Long: `dump writes the text twin of a trace (binary .cuprof or text; "-" reads
standard input): one line per table record and per event, as described in
docs/format.md. The text form is what test fixtures are written in, and it
reads back to the same trace.

With --binary, dump converts its input (text or binary) to a binary .cuprof
file at -o.

Several TRACEs (for example one per process of a job) are merged into one
trace first: strings re-interned, tables combined, drops summed, events
sorted (docs/format.md, "Merging").

A truncated trace is dumped up to its last whole batch, with a one-line
warning on standard error saying how many bytes were lost.`,
		Example: `  cuprof dump run.cuprof | less
  cuprof dump run.cuprof -o run.txt
  cuprof dump fixture.txt --binary -o fixture.cuprof
  cuprof dump rank0.cuprof rank1.cuprof --binary -o job.cuprof`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDump(g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "write to this file (mode 0600) instead of standard output")
	f.BoolVar(&o.binary, "binary", false, "write the binary .cuprof form (needs -o)")
	return cmd
}

func runDump(g *globalOptions, o *dumpOptions, paths []string) error {
	if o.binary && o.output == "" {
		return usageErrorf("--binary needs -o FILE: binary traces are not written to standard output")
	}
	if o.output != "" {
		if err := checkOutput(o.output, paths...); err != nil {
			return err
		}
	}
	traces := make([]*trace.Trace, 0, len(paths))
	for _, path := range paths {
		t, err := loadTrace(g, path, warnDamage)
		if err != nil {
			return err
		}
		traces = append(traces, t)
	}
	t := traces[0]
	if len(traces) > 1 {
		t = trace.Merge(traces...)
		t.Loss = nil // reported per input above
	}
	// Calls whose device the shim could not tell from their arguments get
	// the device of their object or of the thread's current context, as
	// report, lint and the exporters see them (the recorder writes what
	// the shim recorded): the dump writes the analysis's devices.
	analysis.Of(t, analysis.OnEvent(func(e *analysis.Event) { t.Events[e.Index].Device = e.Device }))
	write := trace.WriteText
	if o.binary {
		write = trace.WriteBinary
	}
	out := o.output
	if out == "" {
		out = "-"
	}
	if err := writeOutput(g, out, func(w io.Writer) error { return write(w, t) }); err != nil {
		return fmt.Errorf("cannot write the dump: %w", err)
	}
	return nil
}
