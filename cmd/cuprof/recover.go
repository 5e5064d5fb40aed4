package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/internal/record"
)

type recoverOptions struct {
	output string
}

func newRecoverCmd(g *globalOptions) *cobra.Command {
	o := &recoverOptions{}
	cmd := &cobra.Command{
		Use:   "recover SPILLDIR -o FILE",
		Short: "Turn what a killed cuprof record left beside its output into a trace",
		Long: `recover reads what a recording whose cuprof was killed before it wrote the
trace (SIGKILL, out of memory) left: the private .cuprof-spill-* directory
beside the output it was to write, and the rings in the recording's working
directory that it names (/dev/shm/cuprof-UID/record-*). It writes to FILE every
event the program committed: what the recorder had drained, then what the
rings hold past it, also rings the recorder never polled; on the monotonic
clock from the rings' anchors. Thread names are kept, and the drop counters,
exit statuses and call-site symbols of the processes whose rings were left.
The rings read and their working directory are removed; the spill directory is
left as it is: remove it once the trace is written.`,
		Example: `  cuprof recover .cuprof-spill-1234567 -o run.cuprof`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output == "" {
				return usageErrorf("recover needs -o FILE: the trace to write")
			}
			if err := output.Check(o.output, outputOptions(g)...); err != nil {
				return err
			}
			res, err := record.Recover(args[0], o.output, g.stderr)
			if err != nil {
				return err
			}
			out := o.output
			if res.Rescued != "" {
				out = res.Rescued
			}
			fmt.Fprintf(g.stderr, "cuprof: recovered %d %s of %d %s into %s; remove %s when done\n",
				res.Events, plural(res.Events, "event", "events"), res.Processes, plural(res.Processes, "process", "processes"), out, args[0])
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "trace file to write")
	return cmd
}
