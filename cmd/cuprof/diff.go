package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/diff"
)

type diffOptions struct {
	out    string
	format string
	// a job's ranks (report_job.go: jobDiffPair)
	rank, against string
}

func newDiffCmd(g *globalOptions) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASE NEW [-o OUT.pb.gz] | diff FOLDER --rank N [--against M]",
		Short: "Compare two traces per API and per Python frame, and as a pprof differential profile",
		Long: `diff prints, for every driver API in either trace, its calls, mean and total
time in BASE and NEW and their ratio, largest change in total time first; then,
when either trace has Python frames, every wrapper frame (matched by qualified
name and source file) with its calls and self time per call in BASE and NEW,
their difference and ratio, largest change in total self time first.
--format json writes one JSON document (durations in ns); --format csv writes
one block per table, each row starting with the table's name.
With -o it also writes the differential profile pprof's -diff_base makes (BASE's
samples negated and labelled pprof::base=true, merged with NEW's), for
"go tool pprof -http=: OUT.pb.gz" to show as a flame graph of the change.

With a job's folder (or its traces) and --rank N, diff compares rank N's trace
(NEW) with the median rank's (BASE: the rank whose host time is the median of
the job's), or with rank M's (--against M).`,
		Example: `  cuprof diff buffer.cuprof raw.cuprof
  cuprof diff before.cuprof after.cuprof --format json | jq '.frames[0]'
  cuprof diff buffer.cuprof raw.cuprof -o change.pb.gz
  cuprof diff job/4242/ --rank 17                 # rank 17 against the median rank
  cuprof diff job/4242/ --rank 17 --against 3`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && o.rank == "" && !isJob(args) {
				return usageErrorf("diff takes 2 args, BASE and NEW, or a job's folder with --rank N")
			}
			if len(args) == 1 || o.rank != "" {
				pair, err := jobDiffPair(g, args, o.rank, o.against)
				if err != nil {
					return err
				}
				args = pair
			} else if o.against != "" {
				return usageErrorf("--against needs --rank and a job's folder")
			}
			write, err := formatWriter(o.format, format[*diff.Diff]{"text", diff.WriteText},
				format[*diff.Diff]{"json", diff.WriteJSON}, format[*diff.Diff]{"csv", diff.WriteCSV})
			if err != nil {
				return err
			}
			if o.out != "" {
				if err := checkOutput(g, o.out, args...); err != nil {
					return err
				}
			}
			popts := &profileOptions{view: "api"}
			base, baseFrames, err := buildProfileFrames(g, args[0], popts)
			if err != nil {
				return err
			}
			newp, newFrames, err := buildProfileFrames(g, args[1], popts)
			if err != nil {
				return err
			}
			changes, err := flame.CompareAPIs(base, newp)
			if err != nil {
				return err
			}
			if err := write(g.stdout, diff.New(changes, baseFrames, newFrames)); err != nil {
				return fmt.Errorf("cannot write the comparison: %w", err)
			}
			if o.out == "" {
				return nil
			}
			d, err := flame.Diff(base, newp)
			if err != nil {
				return err
			}
			if err := writeProfile(g, o.out, d); err != nil {
				return err
			}
			g.tell(g.info, "cuprof: open it with: go tool pprof -http=: %s\n", o.out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "also write the differential profile (gzipped pprof protobuf)")
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text, json or csv")
	cmd.Flags().StringVar(&o.rank, "rank", "", "with a job's folder (or traces): the rank to compare (NEW)")
	cmd.Flags().StringVar(&o.against, "against", "", "with --rank: the rank to compare it with (BASE; default: the median rank by host time)")
	return cmd
}
