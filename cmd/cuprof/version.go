package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/trace"
)

// version is cuprof's version, set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func newVersionCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cuprof's version (the same as cuprof --version, with the Go and trace format versions)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(g.stdout, "cuprof version %s\n%s %s/%s, trace format %s\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH, trace.TextHeader)
			return err
		},
	}
}
