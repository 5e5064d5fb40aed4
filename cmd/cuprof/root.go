package main

import (
	"fmt"
	"io"
	"strings"

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

// completionShells makes "cuprof completion" without a shell, or with one
// cobra has no script for, a usage error (status 2) instead of cobra's help
// text and status 0. It is called once the root's output is set: cobra's
// completion commands take the writer they print to when they are made.
func completionShells(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sh := range c.Commands() {
			shells = append(shells, sh.Name())
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("name a shell: %s (usage: cuprof completion SHELL)", strings.Join(shells, ", "))
			}
			return usageErrorf("unknown shell %q: use %s (usage: cuprof completion SHELL)", args[0], strings.Join(shells, ", "))
		}
	}
}

// tell prints one of cuprof's own lines to w (stdout for "wrote FILE"),
// unless -q.
func (g *globalOptions) tell(w io.Writer, format string, a ...any) {
	if !g.quiet {
		fmt.Fprintf(w, format, a...)
	}
}
