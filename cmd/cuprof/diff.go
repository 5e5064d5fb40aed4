package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/flame"
)

type diffOptions struct {
	out string
}

func newDiffCmd(g *globalOptions) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASE NEW [-o OUT.pb.gz]",
		Short: "Compare two traces per API, and as a pprof differential profile",
		Long: `diff prints, for every driver API in either trace, its calls, mean and total
time in BASE and NEW and their ratio, largest change in total time first.
With -o it also writes the differential profile pprof's -diff_base makes (BASE's
samples negated and labelled pprof::base=true, merged with NEW's), for
"go tool pprof -http=: OUT.pb.gz" to show as a flame graph of the change.`,
		Example: `  cuprof diff buffer.cuprof raw.cuprof
  cuprof diff buffer.cuprof raw.cuprof -o change.pb.gz`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out != "" {
				if err := checkOutput(o.out, args...); err != nil {
					return err
				}
			}
			popts := &profileOptions{view: "api"}
			base, err := buildProfile(g, args[0], popts)
			if err != nil {
				return err
			}
			newp, err := buildProfile(g, args[1], popts)
			if err != nil {
				return err
			}
			changes, err := flame.CompareAPIs(base, newp)
			if err != nil {
				return err
			}
			if err := flame.WriteAPIChanges(g.stdout, changes); err != nil {
				return err
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
			fmt.Fprintf(g.stderr, "wrote %s; open it with: go tool pprof -http=: %s\n", o.out, o.out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "also write the differential profile (gzipped pprof protobuf)")
	return cmd
}
