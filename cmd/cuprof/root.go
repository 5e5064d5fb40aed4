package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// globalOptions are what every subcommand shares: its streams and the
// flags of the root command.
type globalOptions struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// info is where cuprof's own lines go (notes, warnings, "wrote X"):
	// stderr, or nothing with -q. Errors are always printed.
	info  io.Writer
	quiet bool // -q
	force bool // --force: internal/output's refusals lifted
	// opened are inputs already opened (view's FIFO, sniffed), read from
	// here instead of by name.
	opened map[string]io.Reader
}

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "cuprof",
		Short: "Tracing profiler for CUDA object lifecycles",
		Long: `cuprof records a span for every context, stream, event, allocation, pool,
synchronize and error-check call of an unmodified CUDA program, plus its NVTX
ranges, and turns the trace into tables, flamegraphs, lint findings, OTLP spans
and Perfetto timelines.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
		PersistentPreRun: func(*cobra.Command, []string) {
			g.info = g.stderr
			if g.quiet {
				g.info = io.Discard
			}
		},
	}
	g.info = g.stderr
	pf := root.PersistentFlags()
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "print none of cuprof's own notes, warnings and summaries (errors still are; the traced program's output is untouched)")
	pf.BoolVar(&g.force, "force", false, "write outputs even through a symbolic link, a block device or another user's FIFO, and replace an existing file instead of keeping it as NAME.old")
	root.AddCommand(
		newRecordCmd(g),
		newRecoverCmd(g),
		newReportCmd(g),
		newDumpCmd(g),
		newFlameCmd(g),
		newViewCmd(g),
		newDiffCmd(g),
		newLintCmd(g),
		newExportCmd(g),
		newTimelineCmd(g),
		newDemoCmd(g),
		newTimeitCmd(g),
		newVersionCmd(g),
		newManCmd(g, root),
	)
	completeFlagValues(root)
	return root
}

// tell prints one of cuprof's own lines to w (stdout for "wrote FILE"),
// unless -q.
func (g *globalOptions) tell(w io.Writer, format string, a ...any) {
	if !g.quiet {
		fmt.Fprintf(w, format, a...)
	}
}
