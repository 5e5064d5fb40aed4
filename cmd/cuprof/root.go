package main

import (
	"io"

	"github.com/spf13/cobra"
)

// globalOptions are what every subcommand shares: its streams.
type globalOptions struct {
	stdin          io.Reader
	stdout, stderr io.Writer
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
	}
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
	)
	return root
}
