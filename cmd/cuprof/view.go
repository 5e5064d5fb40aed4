package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Placeholder until the view command lands.
func newViewCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "view",
		Short:  "view (not yet implemented)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("view is not implemented yet")
		},
	}
}
