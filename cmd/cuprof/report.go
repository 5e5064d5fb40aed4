package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the report command lands.
func newReportCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "report",
		Short:  "report (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("report is not implemented yet")
		},
	}
}
