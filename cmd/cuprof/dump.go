package main

import (
	"fmt"
	"io"
	"iter"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/job"
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

One TRACE is read and written as a stream, in memory that does not grow
with its length (what the analysis keeps aside: docs/benchmarks.md); several
are merged in memory.

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
		if err := checkOutput(g, o.output, paths...); err != nil {
			return err
		}
	}
	// One trace is read as a stream: memory does not grow with its length.
	// Several are merged in memory first.
	var tables *trace.Trace
	var events iter.Seq[*trace.Event]
	readErr := func() error { return nil }
	if len(paths) == 1 {
		f, err := openTrace(g, paths[0], warnDamage)
		if err != nil {
			return err
		}
		defer f.Close()
		r := f.NewEventReader()
		pr := newReadProgress(g, "dump", f.NumEvents(), false, o.output == "" || o.output == "-")
		defer pr.done()
		tables, events = f.Tables(), pr.wrap(r.All())
		readErr = func() error {
			if err := r.Err(); err != nil {
				return traceError(paths[0], err)
			}
			return nil
		}
	} else {
		traces := make([]*trace.Trace, 0, len(paths))
		for _, path := range paths {
			t, err := loadTrace(g, path, warnDamage)
			if err != nil {
				return err
			}
			traces = append(traces, t)
		}
		t := trace.Merge(traces...)
		t.Loss = nil // reported per input above
		// Several hosts on one time axis: how far apart their clocks may be.
		metas := make([]*trace.Meta, len(traces))
		for i := range traces {
			metas[i] = &traces[i].Meta
		}
		if note := job.Clocks(metas); note.Hosts > 1 {
			fmt.Fprintln(g.info, "cuprof: note: "+note.Text)
		}
		tables, events = t, analysis.Events(t)
	}
	out := o.output
	if out == "" {
		out = "-"
	}
	var failed error // a read error: the dump is incomplete
	err := writeOutput(g, out, func(w io.Writer) error {
		ew, err := newDumpWriter(w, tables, o.binary)
		if err != nil {
			return err
		}
		// Calls whose device the shim could not tell from their arguments
		// get the device the analysis attributes (of their object or of
		// the thread's current context), as every other output sees them
		// (the recorder writes what the shim recorded).
		tr := analysis.NewTracker(tables, analysis.Forget())
		for e := range events {
			c := *e
			c.Device = tr.Step(e).Device
			if err := ew.WriteEvent(&c); err != nil {
				return err
			}
		}
		if failed = readErr(); failed != nil {
			return failed
		}
		return ew.Close()
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		return fmt.Errorf("cannot write the dump: %w", err)
	}
	return nil
}

// dumpWriter is where dump writes: the text form or the binary one.
type dumpWriter interface {
	// WriteEvent writes the next event, in trace order.
	WriteEvent(e *trace.Event) error
	// Close writes what is pending.
	Close() error
}

var (
	_ dumpWriter = (*trace.Writer)(nil)
	_ dumpWriter = textDump{}
)

// textDump is a trace.TextWriter as a dumpWriter.
type textDump struct{ *trace.TextWriter }

func (t textDump) Close() error { return t.Flush() }

func newDumpWriter(w io.Writer, tables *trace.Trace, binary bool) (dumpWriter, error) {
	if binary {
		return trace.NewTraceWriter(w, tables)
	}
	tw, err := trace.NewTextWriter(w, tables)
	if err != nil {
		return nil, err
	}
	return textDump{tw}, nil
}
