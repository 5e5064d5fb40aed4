package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/lifecycle"
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
		Args: cobra.MinimumNArgs(1),
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
		return errors.New("--binary needs -o FILE: binary traces are not written to standard output")
	}
	traces := make([]*trace.Trace, 0, len(paths))
	for _, path := range paths {
		t, err := readDumpInput(g, path)
		if err != nil {
			return err
		}
		if t.Loss != nil {
			name := ""
			if len(paths) > 1 {
				name = " " + path
			}
			fmt.Fprintf(g.stderr, "warning: trace%s truncated: %d bytes after offset %d were not read (%s); showing what was read\n",
				name, t.Loss.Bytes, t.Loss.Offset, t.Loss.Reason)
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
	// the shim recorded).
	lifecycle.AttributeDevices(t)
	var err error
	switch {
	case o.binary:
		err = trace.WriteFile(o.output, t)
	case o.output != "":
		err = trace.WriteTextFile(o.output, t)
	default:
		err = trace.WriteText(g.stdout, t)
	}
	if err != nil {
		return fmt.Errorf("cannot write the dump: %w", err)
	}
	return nil
}

// readDumpInput reads one trace ("-" is standard input).
func readDumpInput(g *globalOptions, path string) (*trace.Trace, error) {
	var t *trace.Trace
	var err error
	if path == "-" {
		t, err = trace.Read(g.stdin)
	} else {
		t, err = trace.ReadFile(path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("cannot read trace: %w (check the path)", err)
	case errors.Is(err, trace.ErrNotTrace):
		return nil, fmt.Errorf("cannot read trace: %w (want a .cuprof file or text starting with %q)", err, trace.TextHeader)
	case errors.Is(err, trace.ErrCorrupt):
		return nil, fmt.Errorf("cannot read trace: %w (the file is damaged; record it again)", err)
	case err != nil:
		return nil, fmt.Errorf("cannot read trace: %w", err)
	}
	return t, nil
}
