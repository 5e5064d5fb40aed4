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
}

func newDiffCmd(g *globalOptions) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASE NEW [-o OUT.pb.gz]",
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
"go tool pprof -http=: OUT.pb.gz" to show as a flame graph of the change.`,
		Example: `  cuprof diff buffer.cuprof raw.cuprof
  cuprof diff before.cuprof after.cuprof --format json | jq '.frames[0]'
  cuprof diff buffer.cuprof raw.cuprof -o change.pb.gz`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	return cmd
}
