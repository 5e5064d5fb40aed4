package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the export command lands.
func newExportCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "export",
		Short:  "export (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("export is not implemented yet")
		},
	}
}
